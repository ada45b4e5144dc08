package conn

import (
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// testRR is a minimal round-robin policy for the balancer-switch tests: one
// SubConn per address, all connected, picks rotate over the READY ones.
type testRR struct {
	cc     lb.ClientConn
	subs   []lb.SubConn
	states map[lb.SubConn]lb.ConnectivityState
}

type testRRBuilder struct{}

func (testRRBuilder) Name() string { return "test_rr" }
func (testRRBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &testRR{cc: cc, states: map[lb.SubConn]lb.ConnectivityState{}}
}

func init() { lb.Register(testRRBuilder{}) }

func (b *testRR) UpdateClientConnState(s lb.ClientConnState) error {
	for _, a := range s.ResolverState.Addresses {
		var sc lb.SubConn
		sc, err := b.cc.NewSubConn([]resolver.Address{a}, lb.NewSubConnOptions{StateListener: func(st lb.SubConnState) {
			b.states[sc] = st.ConnectivityState
			if st.ConnectivityState == lb.Idle {
				sc.Connect()
			}
			b.publish()
		}})
		if err != nil {
			return err
		}
		b.subs = append(b.subs, sc)
		sc.Connect()
	}
	b.publish()
	return nil
}

func (b *testRR) publish() {
	var ready []lb.SubConn
	for _, sc := range b.subs {
		if b.states[sc] == lb.Ready {
			ready = append(ready, sc)
		}
	}
	if len(ready) == 0 {
		b.cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
		return
	}
	b.cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: &rrPicker{subs: ready}})
}

func (b *testRR) ResolverError(error) {}
func (b *testRR) ExitIdle()           {}
func (b *testRR) Close() {
	for _, sc := range b.subs {
		sc.Shutdown()
	}
}

type rrPicker struct {
	subs []lb.SubConn
	next atomic.Uint64
}

func (p *rrPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	return lb.PickResult{SubConn: p.subs[(p.next.Add(1)-1)%uint64(len(p.subs))]}, nil
}

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
		ServiceConfig: []byte(`{"loadBalancingConfig":[{"test_rr":{}}]}`),
	})
	// Picks go to both addresses once test_rr's picker is in use.
	seen := map[string]bool{}
	for i := 0; len(seen) < 2 && i < 10000; i++ {
		seen[pickAddr(t, c)] = true
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
	if len(names) != 1 || names[0] != "test_rr" {
		t.Fatalf("balancers %v, want only test_rr", names)
	}
}
