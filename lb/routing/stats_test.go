package routing_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// describeRoutes returns the routing node's routes.
func describeRoutes(p *lbtest.Parent) []lb.RouteStats {
	var n lb.Node
	p.Do(func() { n = p.Balancer.(lb.Describer).Describe() })
	return n.Routes
}

// matches returns each route's count, in order, and the index of the
// route marked last (-1 for none).
func matches(routes []lb.RouteStats) ([]uint64, int) {
	var counts []uint64
	last := -1
	for i, r := range routes {
		counts = append(counts, r.Matches)
		if r.Last {
			last = i
		}
	}
	return counts, last
}

// Describe counts the requests each route matched, exactly, under
// concurrent picks, marks the route of the latest request, names each
// route with its match and action, and keeps a route's count through an
// update that leaves the route alone while a changed route starts again.
func TestDescribeCountsTheRequestsEachRouteMatched(t *testing.T) {
	t.Parallel()
	p, a, b := newRouting(t, twoClusters)
	a.(*lbtest.SubConn).Ready()
	b.(*lbtest.SubConn).Ready()
	picker := p.State().Picker
	pick := func(path string, h http.Header) {
		_, _ = picker.Pick(lb.PickInfo{Ctx: context.Background(), Authority: "svc", HTTPMethod: "GET", Method: path, Metadata: h})
	}
	if counts, last := matches(describeRoutes(p)); counts[0]+counts[1]+counts[2] != 0 || last != -1 {
		t.Fatalf("before any request: %v, last %d; want zeros and no last", counts, last)
	}
	const pickers = 8
	done := make(chan struct{}, pickers)
	for range pickers {
		go func() {
			for range 100 {
				pick("/a", http.Header{"X-B": {"1"}}) // route 0
				pick("/a/x", nil)                     // route 1
				pick("/other", nil)                   // route 2
				pick("/other", nil)
			}
			done <- struct{}{}
		}()
	}
	for range pickers {
		<-done
	}
	pick("/a", nil)
	routes := describeRoutes(p)
	if counts, last := matches(routes); len(counts) != 3 || counts[0] != 800 || counts[1] != 801 || counts[2] != 1600 || last != 1 {
		t.Fatalf("after the picks: %v, last %d; want [800 801 1600], last 1", counts, last)
	}
	want := []lb.RouteStats{
		{Route: "virtualHosts[0] / routes[0]", Match: `{"prefix":"/a","headers":[{"name":"x-b","presentMatch":true}]}`, Action: "cluster b"},
		{Route: "virtualHosts[0] / routes[1]", Match: `{"prefix":"/a"}`, Action: "cluster a"},
		{Route: "virtualHosts[0] / routes[2]", Match: `{"prefix":"/"}`, Action: "weighted clusters a:3, b:1"},
	}
	for i, w := range want {
		if r := routes[i]; r.Route != w.Route || r.Match != w.Match || r.Action != w.Action {
			t.Errorf("route %d: %+v, want %+v", i, r, w)
		}
	}

	// The split of route 2 changes; routes 0 and 1 stay.
	changed := strings.Replace(twoClusters, `{"name": "a", "weight": 3}`, `{"name": "a", "weight": 1}`, 1)
	if err := p.UpdateAddresses(p.ParseConfig("xds_routing_experimental", changed),
		lbtest.PathAddr("10.0.0.1:80", "a"), lbtest.PathAddr("10.0.0.2:80", "b")); err != nil {
		t.Fatal(err)
	}
	picker = p.State().Picker
	pick("/other", nil)
	if counts, last := matches(describeRoutes(p)); counts[0] != 800 || counts[1] != 801 || counts[2] != 1 || last != 2 {
		t.Fatalf("after the update and one request: %v, last %d; want [800 801 1], last 2", counts, last)
	}
	if r := describeRoutes(p)[2]; r.Action != "weighted clusters a:1, b:1" {
		t.Errorf("route 2's action after the update: %q", r.Action)
	}
}
