package clusterimpl_test

import (
	"context"
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	_ "github.com/lbkit/lbkit/lb/roundrobin"
)

// A cluster with a limit of two requests in flight and a drop category
// taking every request's 0%: two picks go through, the third fails with an
// error naming the limit, and a finished request makes room again.
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	p, err := lb.ParseLoadBalancingConfig([]byte(`[{"xds_cluster_impl_experimental": {
		"cluster": "backend", "maxConcurrentRequests": 2,
		"dropCategories": [{"category": "throttle", "requestsPerMillion": 0}],
		"childPolicy": [{"round_robin": {}}]}}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	h := lbtest.New(t)
	h.Build(p.Builder)
	_ = h.UpdateAddresses(p.Config, resolver.Address{Addr: "10.0.0.1:80"})
	h.CC.SubConns()[0].Ready()
	pick := func() func(lb.DoneInfo) {
		r, err := h.State().Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		if err != nil {
			fmt.Println("failed:", err, "| fails even wait-for-ready:", lb.ClassifyPickError(err) == lb.PickFail)
			return nil
		}
		fmt.Println("picked", r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr)
		return r.Done
	}
	first := pick()
	pick()
	pick()
	first(lb.DoneInfo{})
	pick()
	// Output:
	// picked 10.0.0.1:80
	// picked 10.0.0.1:80
	// failed: xds_cluster_impl_experimental: cluster "backend": 2 requests in flight, the most the cluster allows (circuit_breakers max_requests, gRFC A32): too many requests in flight | fails even wait-for-ready: true
	// picked 10.0.0.1:80
}
