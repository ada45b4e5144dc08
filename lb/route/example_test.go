package route_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/lbkit/lbkit/lb/route"
)

// A route configuration in its JSON form (Envoy's RouteConfiguration as
// proto3 JSON), and the routes three requests take.
func ExampleParse() {
	tab, _, err := route.Parse([]byte(`{"virtualHosts": [{
		"domains": ["shop.example.com"],
		"routes": [
			{"match": {"prefix": "/", "headers": [{"name": "x-canary", "exactMatch": "1"}]},
			 "route": {"cluster": "canary"}},
			{"match": {"safeRegex": {"regex": "/items/[0-9]+"}},
			 "route": {"cluster": "items", "timeout": "2s"}},
			{"match": {"prefix": "/"},
			 "route": {"weightedClusters": {"clusters": [{"name": "stable", "weight": 90}, {"name": "canary", "weight": 10}]}}}]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, req := range []route.Request{
		{Authority: "shop.example.com", Method: "GET", Path: "/cart", Headers: http.Header{"X-Canary": {"1"}}},
		{Authority: "shop.example.com", Method: "GET", Path: "/items/42"},
		{Authority: "shop.example.com", Method: "GET", Path: "/cart"},
	} {
		i, err := tab.Find(&req, nil)
		if err != nil {
			fmt.Println(err)
			continue
		}
		a := tab.Route(i).Action
		fmt.Printf("%s -> route %d: cluster %q, split %v, timeout %v\n", req.Path, i, a.Cluster, a.WeightedClusters != nil, a.Bound())
	}
	_, _, err = route.Parse([]byte(`{"virtualHosts": [{"domains": ["*"], "routes": [
		{"match": {"safeRegex": {"regex": "(?<!x)y"}}, "route": {"cluster": "a"}}]}]}`))
	reason, _, _ := strings.Cut(err.Error(), ": error parsing regexp") // Go's own words follow
	fmt.Println(reason)
	// Output:
	// /cart -> route 0: cluster "canary", split false, timeout 0s
	// /items/42 -> route 1: cluster "items", split false, timeout 2s
	// /cart -> route 2: cluster "", split true, timeout 0s
	// virtualHosts[0].routes[0].match.safeRegex.regex: invalid RE2 regex "(?<!x)y"
}
