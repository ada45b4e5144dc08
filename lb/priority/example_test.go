package priority_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// A primary and a fallback, given as a typed config and run on the lbtest
// harness: each address carries its priority's name as its hierarchical
// path. Picks go to the primary while it is READY; when its only backend
// fails, the fallback takes over at once (no failover timer: the primary
// is in TRANSIENT_FAILURE, not still connecting).
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	p, err := lb.ParsePolicyConfig(priority.Policy{
		Children: map[string]priority.ChildPolicy{
			"primary":  {Config: roundrobin.Config{}},
			"fallback": {Config: pickfirst.Config{}},
		},
		Priorities: []string{"primary", "fallback"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := lbtest.New(t)
	h.Build(p.Builder)
	_ = h.UpdateAddresses(p.Config,
		hierarchy.Set(resolver.Address{Addr: "10.0.0.1:80"}, []string{"primary"}),
		hierarchy.Set(resolver.Address{Addr: "10.1.0.1:80"}, []string{"fallback"}))
	pick := func() string {
		r, err := h.State().Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		if err != nil {
			return err.Error()
		}
		return r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr
	}
	h.SubConnFor("10.0.0.1:80").Ready()
	fmt.Println(h.State().ConnectivityState, pick())

	h.SubConnFor("10.0.0.1:80").Fail(errors.New("connection refused"))
	h.SubConnFor("10.1.0.1:80").Ready()
	fmt.Println(h.State().ConnectivityState, pick())
	// Output:
	// READY 10.0.0.1:80
	// READY 10.1.0.1:80
}
