package routing_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// BenchmarkPick picks through the routing policy with 100 routes (the
// request takes the last, a 9:1 split) against the baseline of the
// cluster's own picker alone.
func BenchmarkPick(b *testing.B) {
	var routes []string
	for i := range 99 {
		routes = append(routes, fmt.Sprintf(`{"match":{"prefix":"/api/","headers":[{"name":"x-tenant","exactMatch":"t%d"}]},"route":{"cluster":"a"}}`, i))
	}
	routes = append(routes, `{"match":{"prefix":"/api/"},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":9},{"name":"b","weight":1}]}}}`)
	cfg := `{"routeConfig":{"virtualHosts":[{"domains":["svc"],"routes":[` + strings.Join(routes, ",") + `]}]},
		"clusters":{"a":{"childPolicy":[{"test_leaf":{}}]},"b":{"childPolicy":[{"test_leaf":{}}]}}}`
	p, a, c := newRouting(b, cfg)
	a.(*lbtest.SubConn).Ready()
	c.(*lbtest.SubConn).Ready()
	info := lb.PickInfo{Ctx: context.Background(), Authority: "svc", HTTPMethod: "GET", Method: "/api/cart",
		Metadata: http.Header{"X-Tenant": {"gold"}, "Accept": {"*/*"}}}
	routed := p.State().Picker
	if res, err := routed.Pick(info); err != nil || res.SubConn == nil {
		b.Fatalf("pick: %v", err)
	}
	b.Run("routing", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = routed.Pick(info)
		}
	})
	// The baseline: the leaf policy's own picker, alone.
	lp := lbtest.NewParent(b)
	lp.Build(lbtest.NewLeafBuilder("leaf"))
	if err := lp.UpdateAddresses(lp.ParseConfig("leaf", `{}`), resolver.Address{Addr: "10.0.0.1:80"}); err != nil {
		b.Fatal(err)
	}
	lp.SubConnFor("10.0.0.1:80").Ready()
	leaf := lp.State().Picker
	b.Run("leaf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = leaf.Pick(info)
		}
	})
}
