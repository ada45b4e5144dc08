package conn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// scriptedChecker answers each check with what the test sends.
type scriptedChecker struct {
	calls   chan string // the address of each check, as it starts
	answers chan error
}

func newScriptedChecker() *scriptedChecker {
	return &scriptedChecker{calls: make(chan string, 100), answers: make(chan error)}
}

func (s *scriptedChecker) Check(ctx context.Context, addr resolver.Address, service string) error {
	s.calls <- addr.Addr + "/" + service
	select {
	case err := <-s.answers:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// healthEnv is a channel on a mock clock whose policy asks for health
// checks, with one real backend and a scripted checker.
type healthEnv struct {
	t       *testing.T
	c       *Channel
	r       *testResolver
	m       *clock.Mock
	checker *scriptedChecker
	events  chan subConnEvent
	addr    string
}

func newHealthEnv(t *testing.T, hc HealthCheck, opts ...Option) *healthEnv {
	t.Helper()
	e := &healthEnv{t: t, checker: newScriptedChecker(), events: make(chan subConnEvent, 100)}
	name := "test_health_" + strings.ReplaceAll(t.Name(), "/", "_")
	hc.Checker = e.checker
	e.addr = startServer(t).addr
	e.c, e.r, e.m = newTestChannel(t, append([]Option{WithHealthCheck(hc),
		WithDefaultServiceConfig(fmt.Sprintf(`{"loadBalancingConfig":[{%q:{}}]}`, name)),
		WithRegistry(lb.NewRegistry(stalePolicyBuilder{events: e.events, name: name, health: true}))}, opts...)...)
	return e
}

// start publishes the backend and connects.
func (e *healthEnv) start() {
	e.r.update(e.t, resolver.State{Addresses: addrs(e.addr)})
	e.c.Connect()
}

// check waits for the next check, answers it with err, and waits until the
// channel has applied the answer.
func (e *healthEnv) check(err error) {
	e.t.Helper()
	e.waitCall()
	e.answer(err)
}

// answer answers the check under way with err, and waits until the channel
// has applied the answer.
func (e *healthEnv) answer(err error) {
	e.t.Helper()
	before := e.applied()
	e.checker.answers <- err
	waitUntil(e.t, "the check's answer is applied", func() bool { return e.applied() > before })
	settle(e.t, e.c)
}

func (e *healthEnv) waitCall() string {
	e.t.Helper()
	select {
	case call := <-e.checker.calls:
		return call
	case <-guard(e.t).Done():
		e.t.Fatal("no health check started")
		return ""
	}
}

// noCall fails if a check has started.
func (e *healthEnv) noCall(when string) {
	e.t.Helper()
	settle(e.t, e.c)
	select {
	case call := <-e.checker.calls:
		e.t.Fatalf("%s: a check of %s started", when, call)
	default:
	}
}

// applied returns how many check results the connection has applied.
func (e *healthEnv) applied() int {
	n := 0
	_ = e.c.ser.Run(context.Background(), func() {
		for _, ac := range e.c.addrConns {
			n += ac.checks
		}
	})
	return n
}

// state returns the last state the policy heard for the backend.
func (e *healthEnv) state() lb.ConnectivityState {
	e.t.Helper()
	settle(e.t, e.c)
	last := lb.ConnectivityState(-1)
	for {
		select {
		case ev := <-e.events:
			last = ev.state
		default:
			if last == -1 {
				e.t.Fatal("no SubConn state heard")
			}
			e.events <- subConnEvent{e.addr, last} // keep it for the next look
			return last
		}
	}
}

func (e *healthEnv) want(want lb.ConnectivityState, when string) {
	e.t.Helper()
	if got := e.state(); got != want {
		e.t.Fatalf("%s: SubConn %v, want %v", when, got, want)
	}
}

// Exact deadlines on the mock clock: the first answer decides; one failure
// short of the unhealthy threshold the SubConn is still READY, at the
// threshold it is TRANSIENT_FAILURE; recovery likewise with the healthy
// threshold; a check that outlasts its timeout fails at the timeout.
func TestHealthCheckThresholdsAndDeadlines(t *testing.T) {
	const interval, timeout = 10 * time.Second, time.Second
	e := newHealthEnv(t, HealthCheck{Interval: interval, Timeout: timeout, UnhealthyThreshold: 3, HealthyThreshold: 2, Jitter: -1})
	m := e.m
	e.start()
	if got := e.waitCall(); got != e.addr+"/" {
		t.Fatalf("first check %q, want %s with no service name", got, e.addr)
	}
	e.want(lb.Connecting, "connected, before the first check answers (A17)")
	e.answer(nil)
	e.want(lb.Ready, "first check passed")

	for i := 1; i <= 3; i++ {
		advance(t, e.c, m, interval-time.Nanosecond)
		e.noCall(fmt.Sprintf("failure %d, interval - 1 ns", i))
		advance(t, e.c, m, time.Nanosecond)
		e.check(errors.New("unhealthy"))
		if i < 3 {
			e.want(lb.Ready, fmt.Sprintf("%d failures, threshold 3", i))
		}
	}
	e.want(lb.TransientFailure, "3 failures, threshold 3")
	// The policy's stale picker still offers the backend; the channel
	// refuses it as not READY and would wait for the next picker, so a
	// pick whose context has already ended fails at once, saying why.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if r, err := e.c.Pick(ended, PickOptions{}); err == nil {
		t.Fatalf("picked %s, whose health check fails", r.SubConn.Address().Addr)
	} else if !errors.Is(err, errNotReady) || !errors.Is(err, context.Canceled) {
		t.Fatalf("pick of a backend whose health check fails: %v, want it refused as not READY while waiting for the next picker, until its context ended", err)
	}

	advance(t, e.c, m, interval)
	e.check(nil)
	e.want(lb.TransientFailure, "1 pass, healthy threshold 2")
	advance(t, e.c, m, interval)
	e.check(nil)
	e.want(lb.Ready, "2 passes, healthy threshold 2")

	// A check that never answers fails at its timeout.
	advance(t, e.c, m, interval)
	e.waitCall()
	before := e.applied()
	advance(t, e.c, m, timeout-time.Nanosecond)
	if e.applied() != before {
		t.Fatal("the check failed before its timeout")
	}
	advance(t, e.c, m, time.Nanosecond)
	if e.applied() != before+1 {
		t.Fatal("the check did not fail at its timeout")
	}
	e.want(lb.Ready, "1 timeout, threshold 3")
}

// healthCheckConfig.serviceName turns checking on and reaches the checker;
// WithoutHealthCheck turns it off again, whatever the service config says.
func TestHealthCheckFromServiceConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sc      string
		off     bool
		checked bool
		service string
	}{
		{"serviceName set", `{"healthCheckConfig": {"serviceName": "orders"}}`, false, true, "orders"},
		{"serviceName empty string", `{"healthCheckConfig": {"serviceName": ""}}`, false, true, ""},
		{"serviceName unset (A17: off)", `{"healthCheckConfig": {}}`, false, false, ""},
		{"WithoutHealthCheck", `{"healthCheckConfig": {"serviceName": "orders"}}`, true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &healthEnv{t: t, checker: newScriptedChecker(), events: make(chan subConnEvent, 100)}
			name := "test_health_sc_" + strings.NewReplacer(" ", "_", "(", "", ")", "", ":", "").Replace(tc.name)
			e.addr = startServer(t).addr
			// The option says how to check; the service config, whether.
			opts := []Option{WithHealthCheck(HealthCheck{Checker: e.checker, Jitter: -1, ServiceConfigOnly: true}),
				WithRegistry(lb.NewRegistry(stalePolicyBuilder{events: e.events, name: name, health: true}))}
			if tc.off {
				opts = append(opts, WithoutHealthCheck())
			}
			e.c, e.r, e.m = newTestChannel(t, opts...)
			sc := strings.Replace(tc.sc, "{", fmt.Sprintf(`{"loadBalancingConfig":[{%q:{}}], `, name), 1)
			e.r.update(t, resolver.State{Addresses: addrs(e.addr), ServiceConfig: []byte(sc)})
			e.c.Connect()
			if !tc.checked {
				waitEvents(t, e.events, subConnEvent{e.addr, lb.Ready})
				e.noCall("health checking off")
				return
			}
			if got, want := e.waitCall(), e.addr+"/"+tc.service; got != want {
				t.Fatalf("check %q, want %q", got, want)
			}
			e.answer(nil)
			e.want(lb.Ready, "check passed")
		})
	}
}

func TestHealthCheckConfigErrors(t *testing.T) {
	_, err := parseServiceConfig([]byte(`{"healthCheckConfig": {"serviceName": 7}}`), lb.DefaultRegistry(), false)
	if err == nil || !strings.Contains(err.Error(), "healthCheckConfig.serviceName") {
		t.Fatalf("serviceName 7: %v, want an error naming healthCheckConfig.serviceName", err)
	}
	_, err = New("static:///a:1", WithHealthCheck(HealthCheck{Interval: -1, Jitter: 2}))
	if err == nil || !strings.Contains(err.Error(), "HealthCheck.Interval") || !strings.Contains(err.Error(), "HealthCheck.Jitter") {
		t.Fatalf("bad HealthCheck: %v, want errors naming Interval and Jitter", err)
	}
}

// A backend that does not implement health checking is treated as healthy
// and not checked again (A17); a policy that did not ask for health checks
// (pick_first) never waits for one.
func TestHealthCheckUnimplementedAndUngatedPolicies(t *testing.T) {
	e := newHealthEnv(t, HealthCheck{Interval: time.Second, Jitter: -1})
	e.start()
	e.waitCall()
	e.answer(fmt.Errorf("server says: %w", ErrHealthCheckUnimplemented))
	e.want(lb.Ready, "UNIMPLEMENTED")
	advance(t, e.c, e.m, time.Hour)
	e.noCall("after UNIMPLEMENTED")

	pf, r, _ := newTestChannel(t, WithHealthCheck(HealthCheck{Checker: newScriptedChecker()}))
	r.update(t, resolver.State{Addresses: addrs(startServer(t).addr)})
	if _, err := pf.Pick(guard(t), PickOptions{WaitForReady: true}); err != nil {
		t.Fatalf("pick_first with health checking configured: %v", err)
	}
}
