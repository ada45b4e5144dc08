package conn

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// wantTime fails unless got is set and equal to want.
func wantTime(t *testing.T, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil || !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// finish picks once and reports the request's end with err.
func finish(t *testing.T, c *Channel, err error) {
	t.Helper()
	r, pickErr := c.Pick(guard(t), PickOptions{WaitForReady: true})
	if pickErr != nil {
		t.Fatalf("Pick: %v", pickErr)
	}
	r.Finish(lb.DoneInfo{Err: err})
}

// Every time in the snapshot comes from the channel's clock: when the
// channel, the root balancer, the SubConn and the connection entered their
// states, and when the last health check answered. The per-endpoint
// counters follow PickResult.Finish, and the config in use names its
// source.
func TestSnapshotTimesComeFromTheChannelsClock(t *testing.T) {
	checker := newScriptedChecker()
	const sc = `{ "loadBalancingConfig": [ {"round_robin": {}} ] }`
	c, r, m := newTestChannel(t,
		WithHealthCheck(HealthCheck{Checker: checker, Interval: 10 * time.Second, Timeout: time.Second, UnhealthyThreshold: 1, HealthyThreshold: 1, Jitter: -1}),
		WithDefaultServiceConfig(sc))
	t0 := m.Now()
	s := snapshot(t, c)
	if !s.StateSince.Equal(t0) || s.Config.Source != ConfigFromOption || string(s.Config.ServiceConfig) != `{"loadBalancingConfig":[{"round_robin":{}}]}` || s.Config.Policy != "" {
		t.Fatalf("idle snapshot: since %v, config %+v; want since %v, the option's config compacted, no policy yet", s.StateSince, s.Config, t0)
	}

	m.Add(time.Second)
	t1 := m.Now()
	srv := startServer(t)
	r.update(t, resolver.State{Addresses: addrs(srv.addr)})
	c.Connect()
	answerNextCheck(t, checker, nil)
	waitState(t, c, lb.Ready)
	s = snapshot(t, c)
	if !s.StateSince.Equal(t1) || s.Config.Policy != "round_robin" {
		t.Fatalf("channel READY since %v with policy %q, want since %v and round_robin", s.StateSince, s.Config.Policy, t1)
	}
	wantTime(t, "root StateSince", s.Balancer.StateSince, t1)
	e := s.Balancer.Endpoints[0]
	wantTime(t, "endpoint StateSince", e.StateSince, t1)
	wantTime(t, "endpoint ConnectionSince", e.ConnectionSince, t1)
	if e.LastHealthCheck == nil || *e.LastHealthCheck != (lb.HealthCheckResult{Time: t1, Passed: true}) {
		t.Errorf("LastHealthCheck = %+v, want passed at %v", e.LastHealthCheck, t1)
	}
	if e.Requests != 0 || e.Failures != 0 || e.FailureRate != nil || e.LastConnectionError != nil || e.Error != "" {
		t.Errorf("fresh endpoint %+v, want no requests, no rate, no error", e)
	}

	// Three requests sent, one failed; one pick not sent does not count.
	finish(t, c, nil)
	finish(t, c, nil)
	finish(t, c, errors.New("HTTP 503"))
	finish(t, c, fmt.Errorf("given back: %w", lb.ErrRequestNotSent))
	e = snapshot(t, c).Balancer.Endpoints[0]
	if e.Requests != 3 || e.Failures != 1 || e.FailureRate == nil || *e.FailureRate != 1.0/3 {
		t.Errorf("requests %d, failures %d, rate %v; want 3, 1, 1/3", e.Requests, e.Failures, e.FailureRate)
	}

	advance(t, c, m, 10*time.Second)
	t2 := m.Now()
	answerNextCheck(t, checker, errors.New("backend says 503"))
	waitState(t, c, lb.TransientFailure)
	s = snapshot(t, c)
	e = s.Balancer.Endpoints[0]
	wantTime(t, "endpoint StateSince after the failed check", e.StateSince, t2)
	wantTime(t, "endpoint ConnectionSince (still READY)", e.ConnectionSince, t1)
	if e.LastHealthCheck == nil || *e.LastHealthCheck != (lb.HealthCheckResult{Time: t2, Passed: false, Error: "backend says 503"}) {
		t.Errorf("LastHealthCheck = %+v, want failed at %v", e.LastHealthCheck, t2)
	}
	if !s.StateSince.Equal(t2) {
		t.Errorf("channel TRANSIENT_FAILURE since %v, want %v", s.StateSince, t2)
	}
	if _, err := c.Pick(guard(t), PickOptions{}); err == nil {
		t.Fatal("a fail-fast pick on a TRANSIENT_FAILURE channel succeeded")
	}
	if s = snapshot(t, c); s.LastPickError == nil || !s.LastPickError.Time.Equal(t2) || !strings.Contains(s.LastPickError.Error, "503") {
		t.Errorf("LastPickError = %+v, want the check's 503 at %v", s.LastPickError, t2)
	}

	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"stateSince":"` + t2.Format(time.RFC3339Nano) + `"`, `"connectionSince":"` + t1.Format(time.RFC3339Nano) + `"`,
		`"lastHealthCheck":{"time":"` + t2.Format(time.RFC3339Nano) + `","passed":false,"error":"backend says 503"}`,
		`"requests":3,"failures":1,"failureRate":0.3333333333333333`,
		`"config":{"source":"option","serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}]},"policy":"round_robin"}`,
		`"lastPickError":{"error":`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("JSON %s\ndoes not contain %s", raw, want)
		}
	}
}

// A failed dial is the endpoint's current error while it lasts; once the
// connection recovers, the current error is gone and the failed dial stays
// as lastConnectionError with its time.
func TestSnapshotKeepsTheLastFailedDialWithItsTime(t *testing.T) {
	c, r, m := newTestChannel(t, WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	srv := startServer(t)
	srv.stop()
	m.Add(5 * time.Second)
	failedAt := m.Now()
	r.update(t, resolver.State{Addresses: addrs(srv.addr)})
	c.Connect()
	waitState(t, c, lb.TransientFailure)
	e := snapshot(t, c).Balancer.Endpoints[0]
	if e.Connection != lb.TransientFailure || e.Error == "" || e.LastConnectionError == nil ||
		e.LastConnectionError.Error != e.Error || !e.LastConnectionError.Time.Equal(failedAt) {
		t.Fatalf("endpoint %+v (last %+v), want TRANSIENT_FAILURE with its dial error, current and at %v", e, e.LastConnectionError, failedAt)
	}
	wantTime(t, "ConnectionSince", e.ConnectionSince, failedAt)

	srv.restart()
	advance(t, c, m, 2*time.Minute) // past any backoff: round_robin reconnects
	waitState(t, c, lb.Ready)
	e = snapshot(t, c).Balancer.Endpoints[0]
	if e.Connection != lb.Ready || e.Error != "" || e.LastConnectionError == nil || !e.LastConnectionError.Time.Equal(failedAt) {
		t.Fatalf("recovered endpoint %+v (last %+v), want READY with no current error and the failed dial kept at %v", e, e.LastConnectionError, failedAt)
	}
	if e.ConnectionSince == nil || !e.ConnectionSince.After(failedAt) {
		t.Errorf("ConnectionSince %v, want after %v", e.ConnectionSince, failedAt)
	}
}

// The resolver's error shows with its time until its next update; a
// rejected service config shows with its time while the option's config
// stays in use, and a valid one from the resolver replaces both.
func TestSnapshotShowsResolverErrorsAndTheConfigInUse(t *testing.T) {
	c, r, m := newTestChannel(t, WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	srv := startServer(t)
	r.update(t, resolver.State{Addresses: addrs(srv.addr)})
	c.Connect()
	waitState(t, c, lb.Ready)

	m.Add(time.Second)
	t1 := m.Now()
	r.cc.ReportError(errors.New("dns: no such host"))
	s := snapshot(t, c)
	if s.ResolverError == nil || *s.ResolverError != (lb.TimedError{Error: "dns: no such host", Time: t1}) {
		t.Fatalf("ResolverError = %+v, want the error at %v", s.ResolverError, t1)
	}

	m.Add(time.Second)
	t2 := m.Now()
	r.update(t, resolver.State{Addresses: addrs(srv.addr), ServiceConfig: json.RawMessage(`{"loadBalancingConfig": 7}`)})
	s = snapshot(t, c)
	if s.ResolverError != nil {
		t.Errorf("ResolverError = %+v after an update, want none", s.ResolverError)
	}
	if s.Config.Source != ConfigFromOption || s.Config.Rejected == nil || !s.Config.Rejected.Time.Equal(t2) || !strings.Contains(s.Config.Rejected.Error, "loadBalancingConfig") {
		t.Errorf("config %+v (rejected %+v), want the option's in use and the rejected one named at %v", s.Config, s.Config.Rejected, t2)
	}

	r.update(t, resolver.State{Addresses: addrs(srv.addr), ServiceConfig: json.RawMessage(`{"loadBalancingConfig": [{"pick_first": {}}]}`)})
	waitState(t, c, lb.Ready)
	s = snapshot(t, c)
	if s.Config.Source != ConfigFromResolver || string(s.Config.ServiceConfig) != `{"loadBalancingConfig":[{"pick_first":{}}]}` || s.Config.Rejected != nil || s.Config.Policy != "pick_first" {
		t.Errorf("config %+v, want the resolver's pick_first config, nothing rejected", s.Config)
	}

	plain, _, _ := newTestChannel(t)
	if s := snapshot(t, plain); s.Config.Source != ConfigBuiltin || s.Config.ServiceConfig != nil {
		t.Errorf("a channel without a service config: %+v, want builtin with no JSON", s.Config)
	}
}
