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

// hundredRoutes is a config of 100 routes; the request of pickInfo takes
// the last, a 9:1 split, with the hash policies hashPolicy (a JSON list,
// or "" for none).
func hundredRoutes(hashPolicy string) string {
	var routes []string
	for i := range 99 {
		routes = append(routes, fmt.Sprintf(`{"match":{"prefix":"/api/","headers":[{"name":"x-tenant","exactMatch":"t%d"}]},"route":{"cluster":"a"}}`, i))
	}
	hp := ""
	if hashPolicy != "" {
		hp = `,"hashPolicy":` + hashPolicy
	}
	routes = append(routes, `{"match":{"prefix":"/api/"},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":9},{"name":"b","weight":1}]}`+hp+`}}`)
	return `{"routeConfig":{"virtualHosts":[{"domains":["svc"],"routes":[` + strings.Join(routes, ",") + `]}]},
		"clusters":{"a":{"childPolicy":[{"test_leaf":{}}]},"b":{"childPolicy":[{"test_leaf":{}}]}}}`
}

var pickInfo = lb.PickInfo{Ctx: context.Background(), Authority: "svc", HTTPMethod: "GET", Method: "/api/cart",
	Metadata: http.Header{"X-Tenant": {"gold"}, "Accept": {"*/*"}, "X-User": {"user-4711"}}}

// readyRouting returns the picker of a routing policy over config with
// both clusters READY.
func readyRouting(b testing.TB, config string) lb.Picker {
	p, a, c := newRouting(b, config)
	a.(*lbtest.SubConn).Ready()
	c.(*lbtest.SubConn).Ready()
	routed := p.State().Picker
	if res, err := routed.Pick(pickInfo); err != nil || res.SubConn == nil {
		b.Fatalf("pick: %v", err)
	}
	return routed
}

// BenchmarkPick picks through the routing policy with 100 routes (the
// request takes the last, a 9:1 split), without a hash policy and with a
// header hash policy (gRFC A42: x-user, then the channel id), against the
// baseline of the cluster's own picker alone.
func BenchmarkPick(b *testing.B) {
	info := pickInfo
	for _, bc := range []struct{ name, hashPolicy string }{
		{"routing", ""},
		{"routing-hash", `[{"header":{"headerName":"x-user"}},{"filterState":{"key":"io.grpc.channel_id"}}]`},
	} {
		routed := readyRouting(b, hundredRoutes(bc.hashPolicy))
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = routed.Pick(info)
			}
		})
	}
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
