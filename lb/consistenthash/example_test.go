package consistenthash_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/consistenthash"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Requests with the same x-user header go to the same endpoint: the first
// pick for a user connects that endpoint and waits; once it is READY, every
// request of that user goes there.
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()
	h := lbtest.New(t)
	_, cfg := h.BuildPolicy(consistenthash.RingHashName, `{"requestHashHeader": "x-user"}`)
	_ = h.UpdateAddresses(cfg,
		resolver.Address{Addr: "10.0.0.1:80"}, resolver.Address{Addr: "10.0.0.2:80"}, resolver.Address{Addr: "10.0.0.3:80"})

	alice := lb.PickInfo{Ctx: context.Background(), Metadata: http.Header{"X-User": {"alice"}}}
	_, err := h.State().Picker.Pick(alice)
	fmt.Println("first pick:", err)
	h.Settle() // the pick asked the tree to connect alice's endpoint
	for _, sc := range h.CC.SubConns() {
		if sc.ConnectCount() > 0 {
			sc.Ready()
		}
	}
	first, _ := h.State().Picker.Pick(alice)
	again, _ := h.State().Picker.Pick(alice)
	fmt.Println("same endpoint:", first.SubConn == again.SubConn)
	// Output:
	// first pick: lb: no SubConn is available
	// same endpoint: true
}
