package dns_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/dns"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeCC is lbtest's fake resolver.ClientConn.
type fakeCC = lbtest.ResolverClientConn

// stubLookup is a LookupFunc that records the host and the clock's time of
// each call and answers with respond.
type stubLookup struct {
	clock   clock.Clock
	respond func(ctx context.Context, call int) ([]netip.Addr, error)

	mu    sync.Mutex
	hosts []string
	times []time.Duration // since the Unix epoch, where clock.NewMock starts
}

func (s *stubLookup) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	s.mu.Lock()
	call := len(s.hosts)
	s.hosts = append(s.hosts, host)
	s.times = append(s.times, s.clock.Now().Sub(time.Unix(0, 0)))
	respond := s.respond
	s.mu.Unlock()
	return respond(ctx, call)
}

func (s *stubLookup) setRespond(f func(context.Context, int) ([]netip.Addr, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = f
}

func (s *stubLookup) calls() (hosts []string, times []time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hosts), slices.Clone(s.times)
}

func answer(addrs ...string) func(context.Context, int) ([]netip.Addr, error) {
	return func(context.Context, int) ([]netip.Addr, error) {
		out := make([]netip.Addr, len(addrs))
		for i, a := range addrs {
			out[i] = netip.MustParseAddr(a)
		}
		return out, nil
	}
}

func addrs(ss ...string) []resolver.Address {
	out := make([]resolver.Address, len(ss))
	for i, s := range ss {
		out[i] = resolver.Address{Addr: s}
	}
	return out
}

// build parses target and builds it with b; the resolver is closed when the
// test ends.
func build(t *testing.T, b *dns.Builder, target string, cc resolver.ClientConn, clk clock.Clock) resolver.Resolver {
	t.Helper()
	tg, err := resolver.ParseTarget(target, dns.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Build(tg, cc, resolver.BuildOptions{Clock: clk})
	if err != nil {
		t.Fatalf("Build(%v): %v", tg, err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestRegistered(t *testing.T) {
	if b := resolver.Get(dns.Scheme); b == nil || b.Scheme() != "dns" {
		t.Fatalf("resolver.Get(%q) = %v, want the dns builder", dns.Scheme, b)
	}
}

func TestIPLiteralIsPublishedWithoutLookup(t *testing.T) {
	tests := []struct {
		target string
		opts   []dns.Option
		want   string
	}{
		{"dns:///10.0.0.1", nil, "10.0.0.1:443"},
		{"dns:///10.0.0.1:80", nil, "10.0.0.1:80"},
		{"dns:///[::1]:8080", nil, "[::1]:8080"},
		{"dns:::1", nil, "[::1]:443"},
		{"dns:[::1]", nil, "[::1]:443"},
		{"dns:///[fe80::1%25eth0]:1", nil, "[fe80::1%eth0]:1"},
		{"dns:///::ffff:10.0.0.1", nil, "10.0.0.1:443"},
		{"dns:///10.0.0.1", []dns.Option{dns.WithDefaultPort(8080)}, "10.0.0.1:8080"},
		{"10.0.0.1:0080", nil, "10.0.0.1:80"},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			lookup := func(context.Context, string) ([]netip.Addr, error) {
				t.Error("lookup called for an IP literal")
				return nil, errors.New("unexpected")
			}
			cc := &fakeCC{}
			r := build(t, mustBuilder(t, append(tc.opts, dns.WithLookup(lookup))...), tc.target, cc, clock.NewMock())
			r.ResolveNow()
			r.Close()
			if got := cc.Events.Peek(); len(got) != 1 || !slices.Equal(got[0].State.Addresses, addrs(tc.want)) {
				t.Errorf("published %v, want exactly UpdateState([%s])", got, tc.want)
			}
		})
	}
}

func TestStubbedLookupIsPublished(t *testing.T) {
	tests := []struct {
		target string
		opts   []dns.Option
		want   []resolver.Address
	}{
		{"a.test:8080", nil, addrs("10.0.0.1:8080", "10.0.0.2:8080", "[2001:db8::1]:8080")},
		{"dns:a.test", nil, addrs("10.0.0.1:443", "10.0.0.2:443", "[2001:db8::1]:443")},
		{"dns://9.9.9.9/a.test", []dns.Option{dns.WithDefaultPort(80)}, addrs("10.0.0.1:80", "10.0.0.2:80", "[2001:db8::1]:80")},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			clk := clock.NewMock()
			stub := &stubLookup{clock: clk, respond: answer("10.0.0.1", "::ffff:10.0.0.2", "2001:db8::1")}
			cc := &fakeCC{}
			build(t, mustBuilder(t, append(tc.opts, dns.WithLookup(stub.lookup))...), tc.target, cc, clk)
			st := cc.NextState(t)
			if !slices.Equal(st.Addresses, tc.want) || st.ServiceConfig != nil {
				t.Errorf("published %v (service config %s), want %v and none", st.Addresses, st.ServiceConfig, tc.want)
			}
			if hosts, _ := stub.calls(); !slices.Equal(hosts, []string{"a.test"}) {
				t.Errorf("looked up %q, want [a.test]", hosts)
			}
		})
	}
}

// advanceExactly moves clk to d after the epoch in two steps, d-1ns and d, so
// a timer due at d fires only on the second.
func advanceExactly(clk *clock.Mock, d time.Duration) {
	now := clk.Now().Sub(time.Unix(0, 0))
	clk.Add(d - now - time.Nanosecond)
	clk.Add(time.Nanosecond)
}

func TestResolveNowIsCoalescedAndRateLimited(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []dns.Option
		interval time.Duration
	}{
		{"default", nil, 30 * time.Second},
		{"WithMinResolutionInterval", []dns.Option{dns.WithMinResolutionInterval(5 * time.Second)}, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewMock()
			stub := &stubLookup{clock: clk, respond: answer("10.0.0.1")}
			cc := &fakeCC{}
			r := build(t, mustBuilder(t, append(tc.opts, dns.WithLookup(stub.lookup), noPoll)...), "a.test", cc, clk)
			cc.NextState(t) // the first resolution, at 0

			r.ResolveNow()
			r.ResolveNow()
			r.ResolveNow()
			clk.Add(tc.interval - time.Nanosecond)
			if _, times := stub.calls(); len(times) != 1 || len(cc.Events.Peek()) != 0 {
				t.Fatalf("lookups at %v and events %v before the interval ended, want one lookup and none", times, cc.Events.Peek())
			}
			clk.Add(time.Nanosecond)
			cc.NextState(t) // three requests, one resolution, at the interval

			// Well past the interval, one request resolves at once.
			clk.Add(3 * tc.interval)
			r.ResolveNow()
			cc.NextState(t)
			_, times := stub.calls()
			if want := []time.Duration{0, tc.interval, 4 * tc.interval}; !slices.Equal(times, want) {
				t.Errorf("lookups at %v, want %v", times, want)
			}
		})
	}
}

func TestResolveNowDuringLookupIsNotLost(t *testing.T) {
	clk := clock.NewMock()
	inLookup, release := make(chan struct{}), make(chan struct{})
	stub := &stubLookup{clock: clk, respond: func(ctx context.Context, call int) ([]netip.Addr, error) {
		if call == 0 {
			close(inLookup)
			<-release
		}
		return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
	}}
	cc := &fakeCC{}
	r := build(t, mustBuilder(t, dns.WithLookup(stub.lookup)), "a.test", cc, clk)
	<-inLookup
	r.ResolveNow() // made after the first resolution started
	close(release)
	cc.NextState(t)
	advanceExactly(clk, 30*time.Second)
	cc.NextState(t)
	if _, times := stub.calls(); !slices.Equal(times, []time.Duration{0, 30 * time.Second}) {
		t.Errorf("lookups at %v, want [0s 30s]", times)
	}
}

func TestFailuresAreReportedAndRetriedWithBackoff(t *testing.T) {
	clk := clock.NewMock()
	failure := errors.New("SERVFAIL")
	stub := &stubLookup{clock: clk, respond: func(_ context.Context, call int) ([]netip.Addr, error) {
		if call < 4 {
			return nil, failure
		}
		return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
	}}
	cc := &fakeCC{}
	b := mustBuilder(t, dns.WithLookup(stub.lookup), noPoll, dns.WithBackoff(backoff.Config{
		BaseDelay: time.Second, Multiplier: 2, MaxDelay: 5 * time.Second,
	}))
	r := build(t, b, "a.test", cc, clk)
	// Failures at 0, 1, 3 and 7 s wait 1, 2, 4 and 5 (capped) s.
	wantTimes := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 12 * time.Second}
	for i, at := range wantTimes {
		if i > 0 {
			r.ResolveNow() // no effect on a retry's schedule
			advanceExactly(clk, at)
		}
		if i < 4 {
			if err := cc.NextError(t); !errors.Is(err, failure) || !strings.Contains(err.Error(), `dns: resolving "a.test"`) {
				t.Errorf("failure %d reported as %v, want it wrapped with the host", i, err)
			}
			continue
		}
		if st := cc.NextState(t); !slices.Equal(st.Addresses, addrs("10.0.0.1:443")) {
			t.Errorf("published %v after recovery", st.Addresses)
		}
	}
	if _, times := stub.calls(); !slices.Equal(times, wantTimes) {
		t.Errorf("lookups at %v, want %v", times, wantTimes)
	}
	// A success resets the backoff: the next failure waits BaseDelay again.
	stub.setRespond(func(context.Context, int) ([]netip.Addr, error) { return nil, failure })
	advanceExactly(clk, 42*time.Second)
	r.ResolveNow()
	cc.NextError(t)
	advanceExactly(clk, 43*time.Second)
	cc.NextError(t)
	if _, times := stub.calls(); !slices.Equal(times[5:], []time.Duration{42 * time.Second, 43 * time.Second}) {
		t.Errorf("lookups after the reset at %v, want [42s 43s]", times[5:])
	}
}

func TestJitterStaysInBounds(t *testing.T) {
	clk := clock.NewMock()
	stub := &stubLookup{clock: clk, respond: func(context.Context, int) ([]netip.Addr, error) {
		return nil, errors.New("fail")
	}}
	cc := &fakeCC{}
	build(t, mustBuilder(t, dns.WithLookup(stub.lookup), dns.WithBackoff(backoff.Config{
		BaseDelay: 10 * time.Second, Multiplier: 1, Jitter: 0.5, MaxDelay: 10 * time.Second,
	})), "a.test", cc, clk)
	cc.NextError(t)
	clk.Add(5*time.Second - time.Nanosecond)
	if _, times := stub.calls(); len(times) != 1 {
		t.Fatalf("retried at %v, before the earliest jittered delay 5s", times[1:])
	}
	clk.Add(10*time.Second + time.Nanosecond)
	cc.NextError(t)
	if _, times := stub.calls(); times[1] < 5*time.Second || times[1] > 15*time.Second {
		t.Errorf("retried at %v, want within [5s, 15s]", times[1])
	}
}

func TestRejectedUpdateIsRetriedWithBackoff(t *testing.T) {
	clk := clock.NewMock()
	stub := &stubLookup{clock: clk, respond: answer("10.0.0.1")}
	cc := &fakeCC{}
	cc.FailUpdates(errors.New("bad resolver state"))
	build(t, mustBuilder(t, dns.WithLookup(stub.lookup), dns.WithBackoff(backoff.Config{
		BaseDelay: time.Second, Multiplier: 1.6, MaxDelay: time.Minute,
	})), "a.test", cc, clk)
	cc.NextState(t) // rejected
	advanceExactly(clk, time.Second)
	cc.NextState(t) // accepted
	if _, times := stub.calls(); !slices.Equal(times, []time.Duration{0, time.Second}) {
		t.Errorf("lookups at %v, want [0s 1s]", times)
	}
}

func TestEmptyAnswerIsAnError(t *testing.T) {
	clk := clock.NewMock()
	stub := &stubLookup{clock: clk, respond: answer()}
	cc := &fakeCC{}
	build(t, mustBuilder(t, dns.WithLookup(stub.lookup)), "a.test", cc, clk)
	if err := cc.NextError(t); !errors.Is(err, resolver.ErrNoAddresses) {
		t.Errorf("reported %v, want ErrNoAddresses", err)
	}
}

// blockingLookup blocks until its context ends, then returns the context's
// error on returned.
func blockingLookup(clk clock.Clock) (stub *stubLookup, started <-chan struct{}, returned <-chan error) {
	start, ret := make(chan struct{}, 10), make(chan error, 10)
	stub = &stubLookup{clock: clk, respond: func(ctx context.Context, _ int) ([]netip.Addr, error) {
		start <- struct{}{}
		<-ctx.Done()
		ret <- ctx.Err()
		return nil, ctx.Err()
	}}
	return stub, start, ret
}

func TestCloseCancelsLookupInFlight(t *testing.T) {
	clk := clock.NewMock()
	stub, started, returned := blockingLookup(clk)
	cc := &fakeCC{}
	tg := resolver.Target{Scheme: dns.Scheme, Endpoint: "a.test"}
	r, err := mustBuilder(t, dns.WithLookup(stub.lookup)).Build(tg, cc, resolver.BuildOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	r.Close() // cancels the lookup's context; does not wait for it
	select {
	case err := <-returned:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("lookup ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not cancel the lookup in flight")
	}
	r.Close() // idempotent
	r.ResolveNow()
	if got := cc.Events.Peek(); len(got) != 0 {
		t.Errorf("ClientConn calls %v for a resolver closed mid-lookup, want none", got)
	}
	goleak.VerifyNone(t)
}

func TestCloseWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond func(context.Context, int) ([]netip.Addr, error)
		wait    func(*testing.T, *fakeCC, resolver.Resolver)
	}{
		{"for ResolveNow", answer("10.0.0.1"), func(t *testing.T, cc *fakeCC, _ resolver.Resolver) { cc.NextState(t) }},
		{"for the interval", answer("10.0.0.1"), func(t *testing.T, cc *fakeCC, r resolver.Resolver) { cc.NextState(t); r.ResolveNow() }},
		{"for the backoff", func(context.Context, int) ([]netip.Addr, error) { return nil, errors.New("x") },
			func(t *testing.T, cc *fakeCC, _ resolver.Resolver) { cc.NextError(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewMock()
			stub := &stubLookup{clock: clk, respond: tc.respond}
			cc := &fakeCC{}
			tg := resolver.Target{Scheme: dns.Scheme, Endpoint: "a.test"}
			r, err := mustBuilder(t, dns.WithLookup(stub.lookup)).Build(tg, cc, resolver.BuildOptions{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			tc.wait(t, cc, r)
			r.Close() // must not wait for the clock
			clk.Add(time.Hour)
			if got := cc.Events.Peek(); len(got) != 0 {
				t.Errorf("ClientConn calls %v after Close", got)
			}
			goleak.VerifyNone(t)
		})
	}
}

func TestLookupTimeout(t *testing.T) {
	clk := clock.NewMock()
	stub, started, returned := blockingLookup(clk)
	cc := &fakeCC{}
	build(t, mustBuilder(t, dns.WithLookup(stub.lookup), dns.WithLookupTimeout(10*time.Second)), "a.test", cc, clk)
	<-started
	clk.Add(10 * time.Second)
	if err := cc.NextError(t); !strings.Contains(err.Error(), "lookup timed out after 10s") {
		t.Errorf("reported %v, want a timeout", err)
	}
	<-returned
}

func TestBuildRejectsBadTargets(t *testing.T) {
	b := mustBuilder(t)
	for _, tc := range []struct {
		target resolver.Target
		want   string
	}{
		{resolver.Target{}, `dns: endpoint "": empty`},
		{resolver.Target{Endpoint: "a.test:"}, "missing port after ':'"},
		{resolver.Target{Endpoint: "a.test:99999"}, `invalid port "99999"`},
		{resolver.Target{Endpoint: "a.test:https"}, `invalid port "https"`},
		{resolver.Target{Authority: "1.2.3.4:0", Endpoint: "a.test"}, `dns: authority (DNS server) "1.2.3.4:0": invalid port "0"`},
		{resolver.Target{Authority: "::1:53:x", Endpoint: "a.test"}, "too many colons"},
	} {
		tc.target.Scheme = dns.Scheme
		cc := &fakeCC{}
		r, err := b.Build(tc.target, cc, resolver.BuildOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%#v) = %v, %v; want an error containing %q", tc.target, r, err, tc.want)
		}
		if verr := b.ValidateTarget(tc.target); verr == nil || err == nil || verr.Error() != err.Error() {
			t.Errorf("ValidateTarget(%#v) = %v, want Build's error %v", tc.target, verr, err)
		}
	}
}

// Issue 27's bad input: each bad option is an error that names the option
// and says why, a poll interval below the floor naming both.
func TestNewBuilderRejectsBadOptions(t *testing.T) {
	for _, c := range []struct {
		opt  dns.Option
		want string
	}{
		{dns.WithDefaultPort(0), "WithDefaultPort(0): not a port"},
		{dns.WithMinResolutionInterval(-1), "WithMinResolutionInterval(-1ns): negative"},
		{dns.WithPollInterval(0), "WithPollInterval(0s): not positive"},
		{dns.WithPollInterval(-time.Second), "WithPollInterval(-1s): not positive"},
		{dns.WithPollInterval(time.Second), "WithPollInterval(1s): below the floor WithMinResolutionInterval(30s)"}, // the default floor
		{dns.WithLookupTimeout(-1), "WithLookupTimeout(-1ns): negative"},
		{dns.WithBackoff(backoff.Config{}), "WithBackoff.BaseDelay: must be positive"},
		{dns.WithBackoff(backoff.Config{BaseDelay: time.Second, Multiplier: 0.5, MaxDelay: time.Second}), "WithBackoff.Multiplier: must be"},
		{dns.WithBackoff(backoff.Config{BaseDelay: time.Second, Multiplier: 2, Jitter: 2, MaxDelay: time.Second}), "WithBackoff.Jitter: must be"},
		{dns.WithBackoff(backoff.Config{BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Millisecond}), "WithBackoff.MaxDelay: must be"},
	} {
		if _, err := dns.NewBuilder(c.opt); err == nil || !strings.HasPrefix(err.Error(), "dns: NewBuilder: "+c.want) {
			t.Errorf("NewBuilder error = %v, want dns: NewBuilder: %s...", err, c.want)
		}
	}
	// A poll interval below a floor set explicitly, in either order.
	for _, opts := range [][]dns.Option{
		{dns.WithMinResolutionInterval(10 * time.Second), dns.WithPollInterval(5 * time.Second)},
		{dns.WithPollInterval(5 * time.Second), dns.WithMinResolutionInterval(10 * time.Second)},
	} {
		const want = "dns: NewBuilder: WithPollInterval(5s): below the floor WithMinResolutionInterval(10s)"
		if _, err := dns.NewBuilder(opts...); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("NewBuilder error = %v, want %s...", err, want)
		}
	}
}

func TestZeroBuilderUsesDefaults(t *testing.T) {
	cc := &fakeCC{}
	r := build(t, &dns.Builder{}, "10.0.0.1", cc, clock.NewMock())
	r.Close()
	if got := cc.Events.Peek(); len(got) != 1 || !slices.Equal(got[0].State.Addresses, addrs("10.0.0.1:443")) {
		t.Errorf("zero Builder published %v, want 10.0.0.1:443", got)
	}
}

// noPoll sets a poll interval longer than any test runs, for the tests of
// ResolveNow and backoff.
var noPoll = dns.WithPollInterval(24 * time.Hour)

// mustBuilder returns dns.NewBuilder(opts...) or fails the test.
func mustBuilder(t testing.TB, opts ...dns.Option) *dns.Builder {
	t.Helper()
	b, err := dns.NewBuilder(opts...)
	if err != nil {
		t.Fatalf("NewBuilder: %v", err)
	}
	return b
}

// Close returns while a lookup that ignores its context blocks, and the
// lookup's late result is dropped.
func TestCloseDoesNotWaitForALookupIgnoringItsContext(t *testing.T) {
	inLookup, release := make(chan struct{}), make(chan struct{})
	stub := &stubLookup{clock: clock.NewMock(), respond: func(context.Context, int) ([]netip.Addr, error) {
		close(inLookup)
		<-release // ignores ctx
		return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
	}}
	cc := &fakeCC{}
	r := build(t, mustBuilder(t, dns.WithLookup(stub.lookup)), "a.test", cc, stub.clock)
	<-inLookup
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the lookup")
	}
	close(release)
	if p := cc.Events.Peek(); len(p) > 0 {
		t.Fatalf("ClientConn calls after Close: %v", p)
	}
}
