package conn

import (
	"testing"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// L9 "Swapping out balancer": switching from pick_first to another policy
// reuses the connection to the shared address (no second dial), keeps the
// old picker until the new balancer is READY, and shuts down connections
// only the old balancer used.
func TestBalancerSwitchReusesConnections(t *testing.T) {
	s1, s2, s3 := startServer(t), startServer(t), startServer(t)
	d := &countingDialer{}
	c, r, _ := newTestChannel(t, WithDialer(d))
	r.update(t, resolver.State{Addresses: addrs(s1.addr, s3.addr)})
	if got := pickAddr(t, c); got != s1.addr {
		t.Fatalf("pick_first picked %s, want %s", got, s1.addr)
	}
	r.update(t, resolver.State{
		Addresses:     addrs(s1.addr, s2.addr),
		ServiceConfig: []byte(`{"loadBalancingConfig":[{"weighted_round_robin":{}}]}`),
	})
	// Picks go to both addresses once weighted_round_robin's picker is in
	// use.
	seen := map[string]bool{}
	for ctx := guard(t); len(seen) < 2 && ctx.Err() == nil; {
		seen[pickAddr(t, c)] = true // until s2's connection is READY too
	}
	if !seen[s1.addr] || !seen[s2.addr] {
		t.Fatalf("after the switch picks reached %v, want both %s and %s", seen, s1.addr, s2.addr)
	}
	if got := d.count(s1.addr); got != 1 {
		t.Errorf("%s dialled %d times, want 1: the switch must reuse the connection", s1.addr, got)
	}
	if got := d.count(s2.addr); got != 1 {
		t.Errorf("%s dialled %d times, want 1", s2.addr, got)
	}
	settle(t, c)
	var names []string
	c.ser.Run(guard(t), func() {
		names = append(names, c.current.name)
		if c.pending != nil {
			names = append(names, c.pending.name)
		}
	})
	if len(names) != 1 || names[0] != "weighted_round_robin" {
		t.Fatalf("balancers %v, want only weighted_round_robin", names)
	}
}

// weighted_round_robin over real servers spreads picks exactly by weight
// over every full period once all endpoints are READY.
func TestWeightedRoundRobinSpreadsByWeight(t *testing.T) {
	servers := []*testServer{startServer(t), startServer(t), startServer(t)}
	c, r, _ := newTestChannel(t, WithDefaultServiceConfig(`{"loadBalancingConfig":[{"weighted_round_robin":{}}]}`))
	var as []resolver.Address
	for i, s := range servers {
		as = append(as, weight.Set(resolver.Address{Addr: s.addr}, uint32(i+1)))
	}
	r.update(t, resolver.State{Addresses: as})
	seen := map[string]bool{}
	for i := 0; len(seen) < 3; i++ {
		if i > 100000 {
			t.Fatalf("never saw all three endpoints READY: %v", seen)
		}
		seen[pickAddr(t, c)] = true
	}
	counts := map[string]int{}
	for range 600 {
		counts[pickAddr(t, c)]++
	}
	for i, s := range servers {
		if want := 100 * (i + 1); counts[s.addr] != want {
			t.Errorf("endpoint %d (weight %d): %d picks of 600, want %d", i, i+1, counts[s.addr], want)
		}
	}
}
