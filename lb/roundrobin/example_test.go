package roundrobin_test

import (
	"context"
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// The policy is named in a service config as {"round_robin": {}}, as in
// grpc-go. Here it runs on the lbtest harness: three READY endpoints take
// requests in turn, from a start drawn with the tree's seeded random source.
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	h := lbtest.New(t, lbtest.WithSeed(3))
	_, cfg := h.BuildPolicy(roundrobin.Name, `{}`)
	h.UpdateAddresses(cfg,
		resolver.Address{Addr: "10.0.0.1:443"},
		resolver.Address{Addr: "10.0.0.2:443"},
		resolver.Address{Addr: "10.0.0.3:443"},
	)
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	st, _ := h.CC.LastState()
	fmt.Println("state:", st.ConnectivityState)
	for range 4 {
		r, _ := st.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		fmt.Println(r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr)
	}
	// Output:
	// state: READY
	// 10.0.0.1:443
	// 10.0.0.2:443
	// 10.0.0.3:443
	// 10.0.0.1:443
}
