package leastrequest_test

import (
	"context"
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// The policy is named in a service config as
// {"least_request_experimental": {"choiceCount": 2}}. Here it runs on the
// lbtest harness with a choice count of 10 over two endpoints: a request in
// flight on one endpoint sends the next request to the other, and once that
// request is done (Done), the endpoints are even again.
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	h := lbtest.New(t)
	_, cfg := h.BuildPolicy(leastrequest.Name, `{"choiceCount": 10}`)
	h.UpdateAddresses(cfg, resolver.Address{Addr: "10.0.0.1:443"}, resolver.Address{Addr: "10.0.0.2:443"})
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	st, _ := h.CC.LastState()
	info := lb.PickInfo{Ctx: context.Background()}
	first, _ := st.Picker.Pick(info)
	second, _ := st.Picker.Pick(info)
	fmt.Println("two requests on two endpoints:", first.SubConn != second.SubConn)
	first.Done(lb.DoneInfo{})
	third, _ := st.Picker.Pick(info)
	fmt.Println("the third goes where the first finished:", third.SubConn == first.SubConn)
	// Output:
	// two requests on two endpoints: true
	// the third goes where the first finished: true
}
