package conn

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// answerNextCheck waits for the next check and answers it with err.
func answerNextCheck(t *testing.T, s *scriptedChecker, err error) {
	t.Helper()
	ctx := guard(t)
	select {
	case <-s.calls:
	case <-ctx.Done():
		t.Fatal("no health check started")
	}
	select {
	case s.answers <- err:
	case <-ctx.Done():
		t.Fatal("the health check did not take its answer")
	}
}

// snapshot takes a snapshot after the channel has settled.
func snapshot(t *testing.T, c *Channel) Snapshot {
	t.Helper()
	settle(t, c)
	s, err := c.Snapshot(guard(t))
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return s
}

// The snapshot shows the policy tree with each endpoint's state as the
// policy sees it, the connection's own state and the health verdict; it
// follows a backend's health check failing, and reads the same as JSON.
func TestSnapshotShowsEndpointsConnectionsAndHealth(t *testing.T) {
	checker := newScriptedChecker()
	c, r, m := newTestChannel(t,
		WithHealthCheck(HealthCheck{Checker: checker, Interval: 10 * time.Second, Timeout: time.Second, UnhealthyThreshold: 1, HealthyThreshold: 1, Jitter: -1}),
		WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	if s := snapshot(t, c); s.State != lb.Idle || s.Balancer != nil {
		t.Fatalf("idle channel's snapshot %+v, want IDLE with no balancer", s)
	}
	srv := startServer(t)
	r.update(t, resolver.State{Addresses: addrs(srv.addr)})
	c.Connect()
	answerNextCheck(t, checker, nil)
	waitState(t, c, lb.Ready)

	s := snapshot(t, c)
	if s.Target != "test:///svc" || s.State != lb.Ready || !s.Time.Equal(m.Now()) || s.Balancer == nil {
		t.Fatalf("snapshot %+v, want test:///svc READY at the mock clock's time with a balancer", s)
	}
	n := s.Balancer
	if n.Policy != "round_robin" || n.State != lb.Ready || len(n.Endpoints) != 1 {
		t.Fatalf("balancer %+v, want round_robin READY with one endpoint", n)
	}
	if e := n.Endpoints[0]; e.Address != srv.addr || e.State != lb.Ready || e.Connection != lb.Ready || e.Health != "passing" {
		t.Fatalf("endpoint %+v, want %s READY, connection READY, health passing", e, srv.addr)
	}

	advance(t, c, m, 10*time.Second)
	answerNextCheck(t, checker, errors.New("backend says 503"))
	waitState(t, c, lb.TransientFailure)
	s = snapshot(t, c)
	e := s.Balancer.Endpoints[0]
	if e.State != lb.TransientFailure || e.Connection != lb.Ready || e.Health != "failing" || !strings.Contains(e.Error, "503") {
		t.Fatalf("endpoint %+v, want TRANSIENT_FAILURE to the policy, connection READY, health failing with the check's error", e)
	}

	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	for _, want := range []string{`"state":"TRANSIENT_FAILURE"`, `"policy":"round_robin"`, `"address":"` + srv.addr + `"`, `"health":"failing"`, `"connection":"READY"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("JSON %s does not contain %s", raw, want)
		}
	}
	var back Snapshot
	if err := json.Unmarshal(raw, &back); err != nil || back.Balancer.Endpoints[0].State != lb.TransientFailure {
		t.Errorf("JSON does not read back: %v, %+v", err, back)
	}

	c.Close()
	if _, err := c.Snapshot(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Snapshot after Close: %v, want ErrClosed", err)
	}
}

// describingResolver is a test resolver that describes itself.
type describingResolver struct{ testResolver }

func (r *describingResolver) Build(t resolver.Target, cc resolver.ClientConn, o resolver.BuildOptions) (resolver.Resolver, error) {
	if _, err := r.testResolver.Build(t, cc, o); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *describingResolver) Describe() resolver.Description {
	return resolver.Description{Facts: []resolver.Fact{{Name: "cluster", Value: "payments"}}, LastError: "refused"}
}

// A resolver that describes itself appears in the snapshot; one that does
// not leaves Resolver nil.
func TestSnapshotCarriesTheResolversDescription(t *testing.T) {
	r := &describingResolver{}
	c, err := New("test:///svc", WithResolver(r), WithClock(clock.NewMock()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Connect()
	s := snapshot(t, c)
	if s.Resolver == nil || len(s.Resolver.Facts) != 1 || s.Resolver.Facts[0] != (resolver.Fact{Name: "cluster", Value: "payments"}) || s.Resolver.LastError != "refused" {
		t.Errorf("Resolver = %+v", s.Resolver)
	}
	js, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(js), `"resolver":{"facts":[{"name":"cluster","value":"payments"}],"lastError":"refused"}`) {
		t.Errorf("JSON %s, %v", js, err)
	}

	plain, _, _ := newTestChannel(t)
	plain.Connect()
	if s := snapshot(t, plain); s.Resolver != nil {
		t.Errorf("a resolver without Describe: Resolver = %+v", s.Resolver)
	}
}
