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

// A route's hash policies (gRFC A42) in the JSON form: the user's id,
// taken from the x-user header by a regex rewrite, and, for requests
// without it, the channel's id. Requests of one user hash alike, whatever
// the rest of the header; the routing policy gives the hash to the
// cluster's ring_hash picker.
func ExampleTable_Hasher() {
	tab, _, err := route.Parse([]byte(`{"virtualHosts": [{"domains": ["*"], "routes": [
		{"match": {"prefix": "/"}, "route": {"cluster": "cache", "hashPolicy": [
			{"header": {"headerName": "x-user",
			            "regexRewrite": {"pattern": {"regex": "^([^;]*);.*$"}, "substitution": "\\1"}},
			 "terminal": true},
			{"filterState": {"key": "io.grpc.channel_id"}}]}}]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	const channelID = 42
	hash := func(h http.Header) uint64 {
		req := route.Request{Authority: "cache", Path: "/get", Headers: h}
		i, _ := tab.Find(&req, nil)
		v, _ := tab.Hasher(i).Hash(&req, channelID)
		return v
	}
	a := hash(http.Header{"X-User": {"ann;session=1"}})
	b := hash(http.Header{"X-User": {"ann;session=2"}})
	c := hash(http.Header{"X-User": {"bob;session=1"}})
	fmt.Println("ann twice alike:", a == b, "- ann and bob alike:", a == c)
	fmt.Println("no header, the channel's id:", hash(nil))
	// Output:
	// ann twice alike: true - ann and bob alike: false
	// no header, the channel's id: 42
}
