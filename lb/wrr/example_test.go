package wrr_test

import (
	"context"
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
	"github.com/lbkit/lbkit/lb/wrr"
)

// Weights travel as an address attribute (package weight). Here the policy
// runs on the lbtest harness: three endpoints with weights 1, 2 and 3 get
// one, two and three of every six requests, the heaviest first.
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	h := lbtest.New(t)
	_, cfg := h.BuildPolicy(wrr.Name, `{}`)
	h.UpdateAddresses(cfg,
		weight.Set(resolver.Address{Addr: "10.0.0.1:443"}, 1),
		weight.Set(resolver.Address{Addr: "10.0.0.2:443"}, 2),
		weight.Set(resolver.Address{Addr: "10.0.0.3:443"}, 3),
	)
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	st, _ := h.CC.LastState()
	fmt.Println("state:", st.ConnectivityState)
	for range 6 {
		r, _ := st.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		fmt.Println(r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr)
	}
	// Output:
	// state: READY
	// 10.0.0.3:443
	// 10.0.0.2:443
	// 10.0.0.3:443
	// 10.0.0.1:443
	// 10.0.0.2:443
	// 10.0.0.3:443
}
