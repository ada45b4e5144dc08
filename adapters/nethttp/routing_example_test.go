package nethttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/route"
	"github.com/lbkit/lbkit/lb/routing"
)

// Per-request routing (xds_routing_experimental, gRFC A28) over plain
// net/http: requests carrying x-canary: 1 go to the canary cluster, the
// rest are split 3:1 between stable and canary, and /report may take 2 s at
// most. Each cluster's addresses carry the cluster's name as their
// hierarchical path; here a manual resolver gives them, an xDS resolver
// would in a mesh.
func Example_routing() {
	var addrs []resolver.Address
	for _, cluster := range []string{"stable", "canary"} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, cluster) }))
		defer s.Close()
		addr := resolver.Address{Addr: strings.TrimPrefix(s.URL, "http://")}
		addrs = append(addrs, hierarchy.Set(addr, []string{cluster}))
	}
	prefix := "/"
	policy := routing.Policy{
		Routes: route.Config{VirtualHosts: []route.VirtualHost{{
			Domains: []string{"shop.example.com"},
			Routes: []route.Route{
				{Match: route.Match{Prefix: &prefix, Headers: []route.HeaderMatcher{{Name: "x-canary", ExactMatch: &[]string{"1"}[0]}}},
					Action: &route.Action{Cluster: "canary"}},
				{Match: route.Match{Path: &[]string{"/report"}[0]}, Action: &route.Action{Cluster: "stable", Timeout: 2 * time.Second}},
				{Match: route.Match{Prefix: &prefix}, Action: &route.Action{WeightedClusters: &route.WeightedClusters{
					Clusters: []route.ClusterWeight{{Name: "stable", Weight: 3}, {Name: "canary", Weight: 1}}}}},
			},
		}}},
		Clusters: map[string]lb.PolicyConfig{"stable": roundrobin.Config{}, "canary": roundrobin.Config{}},
	}
	sc, err := lb.MarshalServiceConfig(policy)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := manual.NewBuilder("mesh", manual.WithInitialState(resolver.State{Addresses: addrs, ServiceConfig: []byte(sc)}))
	ch, err := conn.New("mesh:///shop", conn.WithResolver(r))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	client := &http.Client{Transport: &nethttp.Transport{Channel: ch, WaitForReady: true}}

	send := func(canary bool) string {
		req, _ := http.NewRequest(http.MethodGet, "http://shop.example.com/cart", nil)
		if canary {
			req.Header.Set("X-Canary", "1")
		}
		resp, err := client.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	fmt.Println("x-canary: 1 ->", send(true))
	counts := map[string]int{}
	for range 4000 {
		counts[send(false)]++
	}
	fmt.Printf("split: stable %.0f%%, canary %.0f%%\n", float64(counts["stable"])/40, float64(counts["canary"])/40)
	// Output:
	// x-canary: 1 -> canary
	// split: stable 75%, canary 25%
}
