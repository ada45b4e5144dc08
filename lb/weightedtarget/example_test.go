package weightedtarget_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weightedtarget"
	_ "github.com/lbkit/lbkit/lb/wrr" // registers weighted_round_robin
)

// Two localities weighted 1:3, parsed from a service config's
// loadBalancingConfig and run on the lbtest harness: each locality's
// address carries the locality's name as its hierarchical path, and picks
// follow the weights exactly, 1 and 3 in every 4.
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	p, err := lb.ParseLoadBalancingConfig(json.RawMessage(`[{"weighted_target_experimental": {"targets": {
		"localityA": {"weight": 1, "childPolicy": [{"weighted_round_robin": {}}]},
		"localityB": {"weight": 3, "childPolicy": [{"weighted_round_robin": {}}]}
	}}}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	h := lbtest.New(t)
	h.Build(p.Builder)
	_ = h.UpdateAddresses(p.Config,
		hierarchy.Set(resolver.Address{Addr: "10.0.0.1:80"}, []string{"localityA"}),
		hierarchy.Set(resolver.Address{Addr: "10.0.0.2:80"}, []string{"localityB"}))
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	s, _ := h.CC.LastState()
	fmt.Println(s.ConnectivityState)
	counts := make(map[string]int)
	for range 8 {
		r, err := s.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		if err != nil {
			fmt.Println(err)
			return
		}
		counts[r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr]++
	}
	fmt.Println("localityA:", counts["10.0.0.1:80"], "localityB:", counts["10.0.0.2:80"])
	// Output:
	// READY
	// localityA: 2 localityB: 6
}

// Every config error is an *lb.ConfigError naming the JSON path.
func ExampleBuilder_ParseConfig() {
	_, _, err := weightedtarget.Builder{}.ParseConfig(json.RawMessage(`{"targets": {
		"localityA": {"weight": 0, "childPolicy": [{"weighted_round_robin": {}}]}
	}}`))
	fmt.Println(err)
	_, err = lb.ParseLoadBalancingConfig(json.RawMessage(`[{"weighted_target_experimental": {"targets": {
		"localityA": {"weight": 1, "childPolicy": []}
	}}}]`))
	fmt.Println(err)
	// Output:
	// targets["localityA"].weight: must be >= 1, got 0
	// loadBalancingConfig[0].weighted_target_experimental.targets["localityA"].childPolicy: empty policy list
}
