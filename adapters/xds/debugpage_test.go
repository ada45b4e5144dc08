package xds_test

import (
	"html"
	"strconv"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/conn/debugpage"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/routing"
)

// routingNode returns the xds_routing_experimental node of the channel's
// snapshot, and the snapshot.
func routingNode(t *testing.T, ch *conn.Channel) (*lb.Node, conn.Snapshot) {
	t.Helper()
	s, err := ch.Snapshot(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	var find func(n *lb.Node) *lb.Node
	find = func(n *lb.Node) *lb.Node {
		if n.Policy == routing.Name {
			return n
		}
		for i := range n.Children {
			if f := find(&n.Children[i]); f != nil {
				return f
			}
		}
		return nil
	}
	if s.Balancer == nil || find(s.Balancer) == nil {
		t.Fatalf("no %s node in the snapshot %+v", routing.Name, s.Balancer)
	}
	return find(s.Balancer), s
}

// TestDebugPageShowsListenerRouteVersionAndMatches: a channel following
// an Istio-shaped listener shows, in its snapshot and on conn/debugpage,
// the listener, the route configuration and its version, and each route
// with its match, its action, the requests it matched (exactly: one pick
// per request once every cluster is READY) and the route of the latest
// request; a new route configuration version shows with the counts of
// the routes it left alone.
func TestDebugPageShowsListenerRouteVersionAndMatches(t *testing.T) {
	c := newIstioCase(t)
	counts := func() (jason, canary uint64, last string) {
		n, _ := routingNode(t, c.ch)
		if len(n.Routes) != 2 {
			t.Fatalf("routes %+v, want jason and canary", n.Routes)
		}
		for _, r := range n.Routes {
			if r.Last {
				last = r.Route
			}
		}
		return n.Routes[0].Matches, n.Routes[1].Matches, last
	}
	jason0, canary0, _ := counts() // what warming the channel sent
	c.count(30, "end-user", "jason")
	c.count(50)
	jason, canary, last := counts()
	if jason-jason0 != 30 || canary-canary0 != 50 || last != reviewsListener+" / canary" {
		t.Fatalf("after 30 requests of jason and 50 others: jason +%d, canary +%d, latest %q; want +30, +50, the canary route",
			jason-jason0, canary-canary0, last)
	}
	n, s := routingNode(t, c.ch)
	facts := map[string]string{}
	for _, f := range s.Resolver.Facts {
		facts[f.Name] = f.Value
	}
	if facts["listener"] != reviewsListener || facts["route configuration"] != reviewsListener || facts["route configurations version"] != "1" {
		t.Errorf("resolver facts %v; want the listener, its route configuration and version 1", facts)
	}
	if a := n.Routes[1].Action; a != "weighted clusters "+subset("v1")+":90, "+subset("v2")+":10" {
		t.Errorf("canary route's action %q", a)
	}

	_, page := getPage(t, debugpage.New(c.ch))
	for _, want := range []string{"listener", reviewsListener, "route configurations version", `data-role="routes"`,
		`data-route="` + reviewsListener + ` / jason"`, `data-role="route-matches">` + strconv.FormatUint(jason, 10) + "<",
		`data-role="route-matches">` + strconv.FormatUint(canary, 10) + "<", `data-role="last-route"`} {
		if !strings.Contains(html.UnescapeString(page), want) {
			t.Errorf("debug page lacks %q", want)
		}
	}

	// Version 2 changes the split: the jason route keeps its count, the
	// canary route starts again.
	split := c.routes().GetVirtualHosts()[0].GetRoutes()[1].GetRoute().GetWeightedClusters().GetClusters()
	split[0].Weight.Value, split[1].Weight.Value = 50, 50
	c.push("2")
	c.until("route configuration version 2", func() bool {
		_, s := routingNode(t, c.ch)
		for _, f := range s.Resolver.Facts {
			if f.Name == "route configurations version" && f.Value == "2" {
				return true
			}
		}
		return false
	})
	c.until("the new split", func() bool {
		n, _ := routingNode(t, c.ch)
		return strings.HasSuffix(n.Routes[1].Action, ":50")
	})
	c.count(10)
	if j, k, _ := counts(); j != jason || k != 10 {
		t.Errorf("after version 2 and 10 requests: jason %d (want %d, kept), canary %d (want 10, restarted)", j, jason, k)
	}
}
