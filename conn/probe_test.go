package conn

import (
	"errors"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/resolver"
)

// A backend whose dial failed is probed at the health-check interval while
// its connection backs off: exact on the mock clock, no probe at the
// interval minus 1 ns, one at the interval; a failing probe leaves the
// backoff running; once the backend listens again, the next probe passes
// and ends the backoff at once: the policy redials (a real dial) and,
// after A17's first check, picks it, at the probe's instant, though the
// backoff had a minute to run (issue 27).
func TestProbeEndsTheBackoffWithinOneHealthInterval(t *testing.T) {
	const interval = 2 * time.Second
	srv := startServer(t)
	srv.stop() // the backend is down
	dialer := &countingDialer{}
	e := &healthEnv{t: t, checker: newScriptedChecker(), addr: srv.addr}
	e.c, e.r, e.m = newTestChannel(t,
		WithHealthCheck(HealthCheck{Checker: e.checker, Interval: interval, Timeout: time.Second, Jitter: -1}),
		WithBackoff(backoff.Config{BaseDelay: time.Minute, Multiplier: 1.6, MaxDelay: 2 * time.Minute}),
		WithDialer(dialer),
		WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	e.start()
	waitState(t, e.c, lb.TransientFailure)
	if n := dialer.count(srv.addr); n != 1 {
		t.Fatalf("%d dials, want 1", n)
	}

	// While the backend is down, a probe at the interval fails: the
	// connection stays in its backoff.
	advance(t, e.c, e.m, interval-time.Nanosecond)
	e.noCall("interval - 1 ns after the failed dial")
	advance(t, e.c, e.m, time.Nanosecond)
	e.check(errors.New("connection refused"))
	if s := e.c.State(); s != lb.TransientFailure {
		t.Fatalf("channel %v after a failing probe, want TRANSIENT_FAILURE", s)
	}

	srv.restart()
	advance(t, e.c, e.m, interval-time.Nanosecond)
	e.noCall("interval - 1 ns after the failing probe")
	if n := dialer.count(srv.addr); n != 1 {
		t.Fatalf("%d dials before the passing probe, want 1", n)
	}
	advance(t, e.c, e.m, time.Nanosecond)
	start := e.m.Now()
	e.check(nil) // the probe passes: the backoff ends
	e.check(nil) // A17's first check of the new connection
	waitState(t, e.c, lb.Ready)
	if got := pickAddr(t, e.c); got != srv.addr {
		t.Fatalf("picked %s, want %s", got, srv.addr)
	}
	if n := dialer.count(srv.addr); n != 2 {
		t.Fatalf("%d dials, want 2 (the first, and one after the passing probe)", n)
	}
	if d := e.m.Now().Sub(start); d != 0 {
		t.Fatalf("READY %v after the passing probe, want at once (the backoff had a minute left)", d)
	}
}

// With health checking off nothing probes: a backend in backoff is dialled
// again when its backoff ends, exactly then.
func TestNoProbeWithoutHealthChecking(t *testing.T) {
	srv := startServer(t)
	srv.stop()
	dialer := &countingDialer{}
	c, r, m := newTestChannel(t,
		WithBackoff(backoff.Config{BaseDelay: 10 * time.Second, Multiplier: 1, MaxDelay: 10 * time.Second}),
		WithDialer(dialer),
		WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	r.update(t, resolver.State{Addresses: addrs(srv.addr)})
	c.Connect()
	waitState(t, c, lb.TransientFailure)
	srv.restart()
	advance(t, c, m, 10*time.Second-time.Nanosecond)
	if n := dialer.count(srv.addr); n != 1 {
		t.Fatalf("%d dials before the backoff ended, want 1", n)
	}
	advance(t, c, m, time.Nanosecond)
	waitState(t, c, lb.Ready)
	if n := dialer.count(srv.addr); n != 2 {
		t.Fatalf("%d dials after the backoff, want 2", n)
	}
}
