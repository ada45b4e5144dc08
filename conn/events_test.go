package conn

import (
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
)

const priorityConfig = `{"loadBalancingConfig":[{"priority_experimental":{
  "children":{"p0":{"config":[{"round_robin":{}}]},"p1":{"config":[{"round_robin":{}}]}},
  "priorities":["p0","p1"]}}]}`

// nextEvent returns the next event of s whose kind is one of kinds,
// skipping others.
func nextEvent(t *testing.T, s *Subscription, kinds ...lb.EventKind) lb.Event {
	t.Helper()
	ctx := guard(t)
	for {
		select {
		case e, ok := <-s.C:
			if !ok {
				t.Fatalf("subscription closed while waiting for %v", kinds)
			}
			for _, k := range kinds {
				if e.Kind == k {
					return e
				}
			}
		case <-ctx.Done():
			t.Fatalf("no %v event", kinds)
		}
	}
}

// A subscriber hears the policy switch, the channel's state changes and the
// priority policy's changes of child, in order; then SHUTDOWN, and C closes.
func TestSubscribeToStatePolicyAndPriorityChanges(t *testing.T) {
	s0, s1 := startServer(t), startServer(t)
	r := manual.NewBuilder("test", manual.WithInitialState(resolver.State{Addresses: []resolver.Address{
		hierarchy.Set(resolver.Address{Addr: s0.addr}, []string{"p0"}),
		hierarchy.Set(resolver.Address{Addr: s1.addr}, []string{"p1"}),
	}}))
	c, err := New("test:///events", WithResolver(r), WithDefaultServiceConfig(priorityConfig),
		WithHealthCheck(HealthCheck{Interval: 20 * time.Millisecond, Timeout: time.Second, UnhealthyThreshold: 1, HealthyThreshold: 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub := c.Subscribe(0)
	c.Connect()

	if e := nextEvent(t, sub, lb.EventChannelState, lb.EventPolicySwitch); e.Kind != lb.EventChannelState || e.State != lb.Connecting {
		t.Fatalf("first event %+v, want the channel CONNECTING", e)
	}
	if e := nextEvent(t, sub, lb.EventPolicySwitch); e.From != "" || e.To != "priority_experimental" {
		t.Fatalf("policy switch %+v, want to priority_experimental", e)
	}
	if e := nextEvent(t, sub, lb.EventPriorityChange); e.From != "" || e.To != "p0" || e.Path != "" {
		t.Fatalf("priority change %+v, want to p0 at the root", e)
	}
	if e := nextEvent(t, sub, lb.EventChannelState); e.State != lb.Ready {
		t.Fatalf("state %+v, want READY", e)
	}

	s0.stop() // p0's health check fails: p1 takes over
	if e := nextEvent(t, sub, lb.EventPriorityChange); e.From != "p0" || e.To != "p1" {
		t.Fatalf("priority change %+v, want p0 to p1", e)
	}
	if sub.Dropped() != 0 {
		t.Fatalf("%d events dropped with a buffer of %d", sub.Dropped(), DefaultEventBuffer)
	}

	c.Close()
	for nextEvent(t, sub, lb.EventChannelState).State != lb.Shutdown {
	}
	for range sub.C { // drains to the close, which Close has done
	}
	select {
	case _, ok := <-c.Subscribe(1).C:
		if ok {
			t.Fatal("a subscription to a closed channel delivered an event")
		}
	default:
		t.Fatal("a subscription to a closed channel is not closed")
	}
}

// A subscriber that does not read loses events, counted, and never slows
// the channel; Close closes C.
func TestSlowSubscriberDropsEvents(t *testing.T) {
	c, r, _ := newTestChannel(t)
	sub := c.Subscribe(1)
	srv := startServer(t)
	r.update(t, resolver.State{Addresses: addrs(srv.addr)})
	c.Connect()
	waitState(t, c, lb.Ready) // CONNECTING, policy switch, READY: 3 events
	settle(t, c)
	if got := sub.Dropped(); got != 2 {
		t.Fatalf("dropped %d events, want 2 (3 events, buffer 1)", got)
	}
	select {
	case e := <-sub.C:
		if e.Kind != lb.EventChannelState || e.State != lb.Connecting {
			t.Fatalf("kept event %+v, want the first (CONNECTING)", e)
		}
	default:
		t.Fatal("the buffered event is missing")
	}
	sub.Close()
	sub.Close()
	if _, ok := <-sub.C; ok {
		t.Fatal("C delivered after Close")
	}
}
