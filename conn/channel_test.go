package conn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	_ "github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPickFirstConnectsAndPicks(t *testing.T) {
	s1, s2 := startServer(t), startServer(t)
	c, r, _ := newTestChannel(t)
	if c.State() != lb.Idle {
		t.Fatalf("new channel state %v, want IDLE", c.State())
	}
	r.update(t, resolver.State{Addresses: addrs(s1.addr, s2.addr)})
	if got := pickAddr(t, c); got != s1.addr {
		t.Fatalf("picked %s, want the first address %s", got, s1.addr)
	}
	waitState(t, c, lb.Ready)
}

func TestPickFirstFailsOverToSecondAddress(t *testing.T) {
	s1, s2 := startServer(t), startServer(t)
	c, r, _ := newTestChannel(t, WithDialer(TCPDialer{Hold: true}))
	r.update(t, resolver.State{Addresses: addrs(s1.addr, s2.addr)})
	if got := pickAddr(t, c); got != s1.addr {
		t.Fatalf("picked %s, want %s", got, s1.addr)
	}
	s1.stop()
	// With a held connection, its loss is noticed without a request: the
	// channel leaves READY.
	waitState(t, c, lb.Idle)
	if got := pickAddr(t, c); got != s2.addr {
		t.Fatalf("after stopping the first server picked %s, want %s", got, s2.addr)
	}
	if r.resolveNow.Load() == 0 {
		t.Errorf("pick_first did not ask for re-resolution when its connection was lost")
	}
}

func TestReconnectAfterBackoffOnMockClock(t *testing.T) {
	s1 := startServer(t)
	c, r, mock := newTestChannel(t, WithDialer(TCPDialer{Hold: true}))
	r.update(t, resolver.State{Addresses: addrs(s1.addr)})
	pickAddr(t, c)
	s1.stop()
	waitState(t, c, lb.Idle)
	// A fail-fast pick starts a reconnect, which is refused: sticky
	// TRANSIENT_FAILURE, and fail-fast picks fail at once.
	_, err := c.Pick(guard(t), PickOptions{})
	for err == nil || errors.Is(err, context.DeadlineExceeded) {
		waitState(t, c, lb.TransientFailure)
		_, err = c.Pick(guard(t), PickOptions{})
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("fail-fast pick error %q, want the connection error", err)
	}
	s1.restart()
	// The backoff (1 s ± 20%) runs on the mock clock: nothing reconnects
	// until it is advanced.
	advance(t, c, mock, 1200*time.Millisecond)
	if got := pickAddr(t, c); got != s1.addr {
		t.Fatalf("picked %s after restart, want %s", got, s1.addr)
	}
	waitState(t, c, lb.Ready)
}

func TestWaitForReadyVersusFailFast(t *testing.T) {
	ln := startServer(t)
	dead := ln.addr
	ln.stop() // nothing listens on dead now
	c, r, _ := newTestChannel(t)
	r.update(t, resolver.State{Addresses: addrs(dead)})
	c.Connect()
	waitState(t, c, lb.TransientFailure)
	if _, err := c.Pick(guard(t), PickOptions{}); err == nil || !errors.Is(err, lb.ErrTransientFailure) && !strings.Contains(err.Error(), "refused") {
		t.Fatalf("fail-fast pick in TRANSIENT_FAILURE = %v, want the connection error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Pick(ctx, PickOptions{WaitForReady: true})
	var pe *PickError
	if !errors.As(err, &pe) || !errors.Is(err, context.DeadlineExceeded) || pe.Last == nil {
		t.Fatalf("wait-for-ready pick = %v, want a PickError with the deadline and the last pick error", err)
	}
	if !strings.Contains(err.Error(), "refused") {
		t.Errorf("error %q does not name the last pick error", err)
	}
}

func TestQueuedPicksWakeOnNewPicker(t *testing.T) {
	s1 := startServer(t)
	c, r, _ := newTestChannel(t)
	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Pick(guard(t), PickOptions{})
			errs[i] = err
			if err == nil {
				got[i] = res.SubConn.Address().Addr
			}
		}()
	}
	// The picks queue (the channel is connecting, no address yet) until
	// the resolver's update produces a READY picker.
	waitState(t, c, lb.Connecting)
	r.update(t, resolver.State{Addresses: addrs(s1.addr)})
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != s1.addr {
			t.Errorf("pick %d = %q, %v; want %s", i, got[i], errs[i], s1.addr)
		}
	}
}

func TestPickContextCancelled(t *testing.T) {
	c, _, _ := newTestChannel(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Pick(ctx, PickOptions{WaitForReady: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("pick with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestCloseFailsPendingPicks(t *testing.T) {
	c, _, _ := newTestChannel(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Pick(guard(t), PickOptions{WaitForReady: true})
		errc <- err
	}()
	waitState(t, c, lb.Connecting)
	c.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending pick after Close = %v, want ErrClosed", err)
	}
	if _, err := c.Pick(guard(t), PickOptions{WaitForReady: true}); !errors.Is(err, ErrClosed) {
		t.Fatalf("pick after Close = %v, want ErrClosed", err)
	}
	if c.State() != lb.Shutdown {
		t.Fatalf("state after Close = %v, want SHUTDOWN", c.State())
	}
	c.Close() // idempotent
}

func TestIdleTimeout(t *testing.T) {
	s1 := startServer(t)
	d := &countingDialer{}
	c, r, mock := newTestChannel(t, WithIdleTimeout(time.Minute), WithDialer(d))
	r.update(t, resolver.State{Addresses: addrs(s1.addr)})
	pickAddr(t, c)
	advance(t, c, mock, time.Minute-time.Nanosecond)
	if c.State() != lb.Ready {
		t.Fatalf("state %v before the idle timeout, want READY", c.State())
	}
	// Within 1.1 × the timeout of the last pick, the channel is IDLE and
	// holds no connection.
	advance(t, c, mock, 6*time.Second+time.Nanosecond)
	if c.State() != lb.Idle {
		t.Fatalf("state %v after the idle timeout, want IDLE", c.State())
	}
	settle(t, c)
	var open int
	c.ser.Run(guard(t), func() { open = len(c.addrConns) })
	if open != 0 {
		t.Fatalf("%d connections open while IDLE, want 0", open)
	}
	// A pick leaves idle: the resolver is built again and the connection
	// redialled.
	if got := pickAddr(t, c); got != s1.addr {
		t.Fatalf("pick after idle = %s, want %s", got, s1.addr)
	}
	if d.count(s1.addr) != 2 || r.builds != 2 {
		t.Fatalf("dials %d, resolver builds %d; want 2 and 2", d.count(s1.addr), r.builds)
	}
}

func TestIdleTimeoutWaitsWhileActive(t *testing.T) {
	s1 := startServer(t)
	c, r, mock := newTestChannel(t, WithIdleTimeout(time.Minute))
	r.update(t, resolver.State{Addresses: addrs(s1.addr)})
	for range 5 {
		pickAddr(t, c)
		advance(t, c, mock, 50*time.Second)
	}
	if c.State() != lb.Ready {
		t.Fatalf("state %v with a pick every 50s, want READY", c.State())
	}
}

func TestBadResolverStateReResolvesWithBackoff(t *testing.T) {
	c, r, mock := newTestChannel(t)
	c.Connect()
	waitState(t, c, lb.Connecting)
	r.update(t, resolver.State{}) // pick_first: zero addresses
	waitState(t, c, lb.TransientFailure)
	settle(t, c)
	before := r.resolveNow.Load()
	advance(t, c, mock, 800*time.Millisecond-time.Nanosecond)
	if r.resolveNow.Load() != before {
		t.Fatalf("re-resolved before the first backoff (0.8s at the least)")
	}
	advance(t, c, mock, 400*time.Millisecond+time.Nanosecond)
	if r.resolveNow.Load() != before+1 {
		t.Fatalf("ResolveNow calls %d, want %d after the first backoff", r.resolveNow.Load(), before+1)
	}
}

func TestServiceConfigFromResolver(t *testing.T) {
	s1 := startServer(t)
	c, r, _ := newTestChannel(t)
	c.Connect()
	waitState(t, c, lb.Connecting)
	// Invalid and no valid one yet: TRANSIENT_FAILURE naming the problem.
	r.update(t, resolver.State{Addresses: addrs(s1.addr), ServiceConfig: []byte(`{"loadBalancingConfig":[]}`)})
	waitState(t, c, lb.TransientFailure)
	_, err := c.Pick(guard(t), PickOptions{})
	if err == nil || !strings.Contains(err.Error(), "loadBalancingConfig: empty policy list") {
		t.Fatalf("pick error %v, want the service config error", err)
	}
	r.update(t, resolver.State{Addresses: addrs(s1.addr), ServiceConfig: []byte(`{"loadBalancingConfig":[{"pick_first":{}}]}`)})
	if got := pickAddr(t, c); got != s1.addr {
		t.Fatalf("picked %s", got)
	}
	// Invalid again: the last valid one stays in force.
	r.update(t, resolver.State{Addresses: addrs(s1.addr), ServiceConfig: []byte(`{"loadBalancingConfig":[{"nope":{}}]}`)})
	settle(t, c)
	if got := pickAddr(t, c); got != s1.addr {
		t.Fatalf("picked %s after an invalid update", got)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		target string
		opts   []Option
		want   string
	}{
		// An unregistered scheme makes the whole target an endpoint of the
		// default scheme (gRPC's naming rule), which here is no valid dns
		// endpoint.
		{"nosuchscheme:///x", nil, `no resolver is registered for scheme "nosuchscheme", so the whole target was parsed as a "dns" endpoint`},
		{"nosuchscheme:///x", []Option{WithDefaultScheme("nosuchdefault")}, `no resolver registered for scheme "nosuchdefault"`},
		{"dns:///host:99999", nil, `invalid port`},
		{"test:///x", []Option{WithDefaultScheme("")}, "WithDefaultScheme: must not be empty"},
		{"test:///x", []Option{WithResolver(&testResolver{}), WithIdleTimeout(-time.Second)}, "WithIdleTimeout: must be >= 0"},
		{"test:///x", []Option{WithResolver(&testResolver{}), WithBackoff(backoff.Config{})}, "WithBackoff.BaseDelay"},
		{"test:///x", []Option{WithResolver(&testResolver{}), WithDefaultServiceConfig(`{"loadBalancingConfig":[{"x":{}}]}`)},
			`WithDefaultServiceConfig: service config: loadBalancingConfig: no registered policy`},
	} {
		_, err := New(tc.target, tc.opts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q) = %v, want an error containing %q", tc.target, err, tc.want)
		}
	}
}

// gRFC A62: IDLE_TIMEOUT is on by default, at 30 minutes.
func TestIdleTimeoutDefault(t *testing.T) {
	if DefaultIdleTimeout != 30*time.Minute {
		t.Fatalf("DefaultIdleTimeout = %v, want 30m", DefaultIdleTimeout)
	}
	s1 := startServer(t)
	c, r, mock := newTestChannel(t)
	if c.cfg.idleTimeout != DefaultIdleTimeout {
		t.Fatalf("idle timeout %v without the option, want %v", c.cfg.idleTimeout, DefaultIdleTimeout)
	}
	r.update(t, resolver.State{Addresses: addrs(s1.addr)})
	pickAddr(t, c)
	advance(t, c, mock, 33*time.Minute+time.Nanosecond)
	if c.State() != lb.Idle {
		t.Fatalf("state %v 33 minutes after the last pick, want IDLE", c.State())
	}
}

// TestSubConnClosed checks that SubConn.Closed turns true when the
// SubConn's address leaves the channel, and for every SubConn when the
// channel is closed, and stays false for the others.
func TestSubConnClosed(t *testing.T) {
	s1, s2 := startServer(t), startServer(t)
	c, r, _ := newTestChannel(t, WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	r.update(t, resolver.State{Addresses: addrs(s1.addr, s2.addr)})
	picked := map[string]*SubConn{}
	for len(picked) < 2 {
		res, err := c.Pick(guard(t), PickOptions{WaitForReady: true})
		if err != nil {
			t.Fatalf("Pick: %v", err)
		}
		picked[res.SubConn.Address().Addr] = res.SubConn
	}
	for a, sc := range picked {
		if sc.Closed() {
			t.Fatalf("%s: Closed before anything changed", a)
		}
	}
	r.update(t, resolver.State{Addresses: addrs(s2.addr)})
	settle(t, c)
	if !picked[s1.addr].Closed() {
		t.Errorf("%s left the channel: Closed() = false", s1.addr)
	}
	if picked[s2.addr].Closed() {
		t.Errorf("%s is still a backend: Closed() = true", s2.addr)
	}
	c.Close()
	if !picked[s2.addr].Closed() {
		t.Errorf("channel closed: Closed() = false for %s", s2.addr)
	}
}
