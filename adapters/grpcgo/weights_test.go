package grpcgo_test

import (
	"maps"
	"testing"

	"google.golang.org/grpc/resolver"

	"github.com/lbkit/lbkit/adapters/grpcgo"
)

// exactly fails the test unless got equals want.
func exactly(tb testing.TB, what string, got, want map[string]int) {
	tb.Helper()
	if !maps.Equal(got, want) {
		tb.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// weighted_round_robin's EDF schedule is exact over every full period: with
// weights 1:2:3, any 600 consecutive picks of one picker (100 periods) give
// 100:200:300.
func TestWeightedRoundRobinExactShares(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	addrs := []resolver.Address{
		grpcgo.SetWeight(a.address(), 1),
		grpcgo.SetWeight(b.address(), 2),
		grpcgo.SetWeight(c.address(), 3),
	}
	cl := newClient(t, resolver.State{Addresses: addrs},
		`{"loadBalancingConfig": [{"lbkit_weighted_round_robin": {}}]}`)

	// Once every server has answered, all three are READY and the picker
	// no longer changes.
	cl.waitUntilServed(t, "a", "b", "c")
	exactly(t, "600 RPCs", cl.count(t, 600), map[string]int{"a": 100, "b": 200, "c": 300})
}

// A grpc-go resolver (here the manual one) feeds lbkit's hierarchy paths
// and weights through the helpers, first on Addresses, then on Endpoints,
// and a weight change takes effect with the update, keeping the
// connections.
func TestResolverFeedsPathsAndWeights(t *testing.T) {
	p0a, p0b, p1 := startBackend(t, "p0a"), startBackend(t, "p0b"), startBackend(t, "p1")
	state := func(wa, wb uint32) resolver.State {
		return resolver.State{Addresses: []resolver.Address{
			grpcgo.SetHierarchyPath(grpcgo.SetWeight(p0a.address(), wa), []string{"p0"}),
			grpcgo.SetHierarchyPath(grpcgo.SetWeight(p0b.address(), wb), []string{"p0"}),
			grpcgo.SetHierarchyPath(p1.address(), []string{"p1"}),
		}}
	}
	c := newClient(t, state(1, 3), priorityConfig(grpcgo.PriorityName, "weighted_round_robin"))
	c.waitUntilServed(t, "p0a", "p0b")
	exactly(t, "weights 1:3", c.count(t, 400), map[string]int{"p0a": 100, "p0b": 300})

	// The manual resolver's UpdateState returns once the balancer has
	// handled the update, so the new picker is in place.
	dials := c.dials.count()
	c.r.UpdateState(state(3, 1))
	exactly(t, "weights 3:1", c.count(t, 400), map[string]int{"p0a": 300, "p0b": 100})

	// The same through Endpoints.
	endpoint := func(a resolver.Address, path string, w uint32) resolver.Endpoint {
		ep := resolver.Endpoint{Addresses: []resolver.Address{a}}
		return grpcgo.SetEndpointWeight(grpcgo.SetEndpointHierarchyPath(ep, []string{path}), w)
	}
	c.r.UpdateState(resolver.State{Endpoints: []resolver.Endpoint{
		endpoint(p0a.address(), "p0", 1),
		endpoint(p0b.address(), "p0", 4),
		endpoint(p1.address(), "p1", 1),
	}})
	exactly(t, "endpoint weights 1:4", c.count(t, 500), map[string]int{"p0a": 100, "p0b": 400})
	if got := c.dials.count(); got != dials {
		t.Errorf("weight updates made %d new connections, want none", got-dials)
	}
}

// weighted_target splits traffic between targets by the hierarchy path's
// first element, and each target's child policy picks within it.
func TestWeightedTarget(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	endpoint := func(be *backend, target string) resolver.Endpoint {
		return grpcgo.SetEndpointHierarchyPath(resolver.Endpoint{Addresses: []resolver.Address{be.address()}}, []string{target})
	}
	c := newClient(t, resolver.State{Endpoints: []resolver.Endpoint{endpoint(a, "ta"), endpoint(b, "tb")}},
		`{"loadBalancingConfig": [{"lbkit_weighted_target": {"targets": {
			"ta": {"weight": 1, "childPolicy": [{"pick_first": {}}]},
			"tb": {"weight": 2, "childPolicy": [{"pick_first": {}}]}
		}}}]}`)
	c.waitUntilServed(t, "a", "b")
	exactly(t, "targets 1:2", c.count(t, 300), map[string]int{"a": 100, "b": 200})
}
