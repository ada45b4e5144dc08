package grpcgo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/lbkit/lbkit/adapters/grpcgo"
)

// priorityConfig is a service config running the priority policy name with
// children p0 and p1, each running the lbkit policy child.
func priorityConfig(name, child string) string {
	return fmt.Sprintf(`{"loadBalancingConfig": [{%q: {
		"children": {
			"p0": {"config": [{%q: {}}]},
			"p1": {"config": [{%q: {}}]}
		},
		"priorities": ["p0", "p1"]
	}}]}`, name, child, child)
}

// inPriority returns addr with the hierarchy path [child].
func inPriority(child string, addrs ...resolver.Address) []resolver.Address {
	out := make([]resolver.Address, len(addrs))
	for i, a := range addrs {
		out[i] = grpcgo.SetHierarchyPath(a, []string{child})
	}
	return out
}

// onlyIn fails the test unless every server in counts is one of names.
func onlyIn(tb testing.TB, what string, counts map[string]int, names ...string) {
	tb.Helper()
	allowed := make(map[string]bool)
	for _, n := range names {
		allowed[n] = true
	}
	for n := range counts {
		if !allowed[n] {
			tb.Fatalf("%s: got %v, want RPCs only on %v", what, counts, names)
		}
	}
}

func TestPriorityFailoverAndBack(t *testing.T) {
	p0a, p0b := startBackend(t, "p0a"), startBackend(t, "p0b")
	p1a, p1b := startBackend(t, "p1a"), startBackend(t, "p1b")
	var addrs []resolver.Address
	addrs = append(addrs, inPriority("p0", p0a.address(), p0b.address())...)
	addrs = append(addrs, inPriority("p1", p1a.address(), p1b.address())...)
	c := newClient(t, resolver.State{Addresses: addrs}, priorityConfig(grpcgo.PriorityName, "weighted_round_robin"))

	c.waitUntilServed(t, "p0a", "p0b")
	onlyIn(t, "p0 up", c.count(t, 40), "p0a", "p0b")

	// Both p0 servers stop: p0 fails and traffic moves to p1.
	p0a.stop()
	p0b.stop()
	c.waitUntilServed(t, "p1a", "p1b")
	onlyIn(t, "p0 down", c.count(t, 40), "p1a", "p1b")

	// p0 comes back: traffic returns to it.
	p0a.restart()
	p0b.restart()
	c.waitUntilServed(t, "p0a", "p0b")
	onlyIn(t, "p0 back", c.count(t, 40), "p0a", "p0b")
}

// A p0 server that accepts TCP connections but never completes the HTTP/2
// handshake holds p0 in CONNECTING; the failover timer, on a mock clock,
// moves traffic to p1 exactly when it expires.
func TestPriorityFailoverTimer(t *testing.T) {
	hole1, hole2 := startBlackhole(t), startBlackhole(t)
	p1a, p1b := startBackend(t, "p1a"), startBackend(t, "p1b")
	var addrs []resolver.Address
	addrs = append(addrs, inPriority("p0", resolver.Address{Addr: hole1.addr}, resolver.Address{Addr: hole2.addr})...)
	addrs = append(addrs, inPriority("p1", p1a.address(), p1b.address())...)
	c := newClient(t, resolver.State{Addresses: addrs}, priorityConfig(mockPriorityName, "pick_first"))

	c.waitForState(t, connectivity.Connecting)
	c.dials.waitFor(t, 1) // pick_first is connecting to hole1
	failoverClock.settle(t)

	// Just before the 10 s timeout: still CONNECTING, RPCs still wait.
	failoverClock.advance(t, 10*time.Second-time.Nanosecond)
	if s := c.GetState(); s != connectivity.Connecting {
		t.Fatalf("1 ns before the failover timeout: state %v, want CONNECTING", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.who(ctx); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("RPC 1 ns before the failover timeout: got %v, want it to wait until its deadline", err)
	}

	// At the timeout: p1 is used.
	failoverClock.advance(t, time.Nanosecond)
	c.waitUntilServed(t, "p1a")
	onlyIn(t, "after the failover timeout", c.count(t, 20), "p1a")
}
