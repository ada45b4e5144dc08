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

// With entriesPerWeight, each endpoint has weight × 100 entries of its own,
// so adding an endpoint moves keys only to it: none moves between the
// endpoints that stay. (A42's default ring would move some: every
// endpoint's entries depend on how many endpoints there are.)
func Example_entriesPerWeight() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()
	h := lbtest.New(t)
	_, cfg := h.BuildPolicy(consistenthash.RingHashName, `{"entriesPerWeight": 100}`)
	addrs := []resolver.Address{{Addr: "10.0.0.1:80"}, {Addr: "10.0.0.2:80"}, {Addr: "10.0.0.3:80"}}
	key := func(k uint64) lb.PickInfo {
		return lb.PickInfo{Ctx: context.Background(), Hash: k * 0x9e3779b97f4a7c15, HasHash: true}
	}
	owners := func() map[uint64]string {
		for k := range uint64(1000) {
			_, _ = h.State().Picker.Pick(key(k)) // connects the endpoint of k
		}
		h.Settle()
		for _, sc := range h.CC.SubConns() {
			if sc.ConnectCount() > 0 && sc.State() != lb.Ready {
				sc.Ready()
			}
		}
		out := map[uint64]string{}
		for k := range uint64(1000) {
			r, _ := h.State().Picker.Pick(key(k))
			out[k] = r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr
		}
		return out
	}
	_ = h.UpdateAddresses(cfg, addrs...)
	before := owners()
	_ = h.UpdateAddresses(cfg, append(addrs, resolver.Address{Addr: "10.0.0.4:80"})...)
	moved, between := 0, 0
	for k, addr := range owners() {
		if addr != before[k] {
			moved++
			if addr != "10.0.0.4:80" {
				between++
			}
		}
	}
	fmt.Printf("keys moved to the new endpoint: about a quarter: %v; between the others: %d\n", moved > 150 && moved < 350, between)
	// Output:
	// keys moved to the new endpoint: about a quarter: true; between the others: 0
}
