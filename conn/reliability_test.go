package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// stalePolicy is a test policy whose picker always returns the SubConn of
// the first address of the latest update, and which never publishes a new
// picker when a SubConn leaves READY: its picker goes stale on purpose.
// Every SubConn state it hears of is sent on events.
type stalePolicy struct {
	cc     lb.ClientConn
	events chan<- subConnEvent
	subs   map[string]lb.SubConn
	first  string
	ready  bool
	health bool
}

type subConnEvent struct {
	addr  string
	state lb.ConnectivityState
}

type stalePolicyBuilder struct {
	events chan<- subConnEvent
	name   string // "test_stale_picker" if empty
	health bool   // ask for health checks
}

func (b stalePolicyBuilder) Name() string {
	if b.name == "" {
		return "test_stale_picker"
	}
	return b.name
}
func (b stalePolicyBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &stalePolicy{cc: cc, events: b.events, subs: map[string]lb.SubConn{}, health: b.health}
}

func (p *stalePolicy) UpdateClientConnState(s lb.ClientConnState) error {
	for _, a := range s.ResolverState.Addresses {
		if p.subs[a.Addr] != nil {
			continue
		}
		addr := a.Addr
		sc, err := p.cc.NewSubConn([]resolver.Address{a}, lb.NewSubConnOptions{HealthCheck: p.health, StateListener: func(st lb.SubConnState) {
			p.events <- subConnEvent{addr, st.ConnectivityState}
			if st.ConnectivityState == lb.Ready && !p.ready {
				p.ready = true
				p.publish()
			}
		}})
		if err != nil {
			return err
		}
		p.subs[addr] = sc
		sc.Connect()
	}
	p.first = s.ResolverState.Addresses[0].Addr
	p.publish()
	return nil
}

func (p *stalePolicy) publish() {
	if !p.ready {
		p.cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
		return
	}
	p.cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: fixedPicker{p.subs[p.first]}})
}

// fixedPicker always picks sc.
type fixedPicker struct{ sc lb.SubConn }

func (f fixedPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	return lb.PickResult{SubConn: f.sc}, nil
}

func (p *stalePolicy) ResolverError(error) {}
func (p *stalePolicy) ExitIdle()           {}
func (p *stalePolicy) Close()              {}

// waitEvents waits until each of want has come on events, in any order,
// skipping others.
func waitEvents(t *testing.T, events <-chan subConnEvent, want ...subConnEvent) {
	t.Helper()
	ctx := guard(t)
	missing := map[subConnEvent]bool{}
	for _, w := range want {
		missing[w] = true
	}
	for len(missing) > 0 {
		select {
		case e := <-events:
			delete(missing, e)
		case <-ctx.Done():
			t.Fatalf("SubConn events %v never came", missing)
		}
	}
}

// waitUntil polls cond until it holds; the guard only turns a hang into a
// failure.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := guard(t)
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// A fail-fast pick whose picker returns a SubConn that has left READY waits
// for the next picker instead of failing (L9: the picker is stale, not the
// channel in TRANSIENT_FAILURE).
func TestFailFastPickWaitsWhenPickedSubConnLeftReady(t *testing.T) {
	events := make(chan subConnEvent, 100)
	a, b := startServer(t), startServer(t)
	c, r, _ := newTestChannel(t, WithDialer(TCPDialer{Hold: true}), WithDefaultServiceConfig(`{"loadBalancingConfig":[{"test_stale_picker":{}}]}`),
		WithRegistry(lb.NewRegistry(stalePolicyBuilder{events: events})))
	r.update(t, resolver.State{Addresses: addrs(a.addr, b.addr)})
	c.Connect()
	waitEvents(t, events, subConnEvent{a.addr, lb.Ready}, subConnEvent{b.addr, lb.Ready})
	a.stop()
	waitEvents(t, events, subConnEvent{a.addr, lb.Idle}) // the picker still returns a

	type result struct {
		addr string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.Pick(guard(t), PickOptions{})
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{addr: res.SubConn.Address().Addr}
	}()
	waitUntil(t, "the pick waits", func() bool {
		select {
		case res := <-done:
			t.Fatalf("fail-fast pick of a SubConn that left READY returned %+v, want it to wait for the next picker", res)
		default:
		}
		return c.waiting.Load() == 1
	})
	r.update(t, resolver.State{Addresses: addrs(b.addr, a.addr)}) // a picker returning b
	if res := <-done; res.err != nil || res.addr != b.addr {
		t.Fatalf("pick = %+v, want %s", res, b.addr)
	}
}

func TestPickWithNilContext(t *testing.T) {
	c, r, _ := newTestChannel(t)
	//lint:ignore SA1012 a nil context is what this test is about
	if _, err := c.Pick(nil, PickOptions{}); !errors.Is(err, ErrNilContext) { //nolint:staticcheck
		t.Fatalf("idle channel: Pick(nil) = %v, want ErrNilContext", err)
	}
	r.update(t, resolver.State{Addresses: addrs("127.0.0.1:1")}) // refused: TRANSIENT_FAILURE
	c.Connect()
	waitState(t, c, lb.TransientFailure)
	for _, wfr := range []bool{false, true} {
		//lint:ignore SA1012 a nil context is what this test is about
		if _, err := c.Pick(nil, PickOptions{WaitForReady: wfr}); !errors.Is(err, ErrNilContext) { //nolint:staticcheck
			t.Fatalf("during an outage: Pick(nil, WaitForReady=%v) = %v, want ErrNilContext", wfr, err)
		}
	}
}

// cancelReturningDialer returns a connection only when its context is
// cancelled: the dial completes exactly as Close (or idleness) cancels it.
type cancelReturningDialer struct {
	started        chan struct{}
	returned, shut atomic.Int64
}

func (d *cancelReturningDialer) Dial(ctx context.Context, _ resolver.Address) (Conn, error) {
	d.started <- struct{}{}
	<-ctx.Done()
	d.returned.Add(1)
	return &countedConn{d: d, lost: make(chan struct{})}, nil
}

type countedConn struct {
	d    *cancelReturningDialer
	lost chan struct{}
	once sync.Once
}

func (c *countedConn) Lost() <-chan struct{} { return c.lost }
func (c *countedConn) Close() error {
	c.once.Do(func() { c.d.shut.Add(1) })
	return nil
}

// Every Conn a dialer returns is closed by the time Close returns, even
// one whose dial completed as Close ran.
func TestCloseClosesConnsDialedDuringClose(t *testing.T) {
	d := &cancelReturningDialer{started: make(chan struct{}, 1)}
	for i := range 500 {
		c, err := New("static:///127.0.0.1:1", WithDialer(d), WithRandSeed(uint64(i), 1))
		if err != nil {
			t.Fatal(err)
		}
		c.Connect()
		select {
		case <-d.started:
		case <-guard(t).Done():
			t.Fatal("no dial started")
		}
		c.Close()
		if r, s := d.returned.Load(), d.shut.Load(); r != s {
			t.Fatalf("cycle %d: %d Conns returned by the dialer, %d closed when Close returned", i, r, s)
		}
	}
}

// updateCounter is a test policy that records the addresses of every
// update it receives.
type updateCounter struct {
	mu      sync.Mutex
	updates [][]resolver.Address
}

func (u *updateCounter) Name() string { return "test_update_counter" }
func (u *updateCounter) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
	return u
}
func (u *updateCounter) UpdateClientConnState(s lb.ClientConnState) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.updates = append(u.updates, s.ResolverState.Addresses)
	return nil
}
func (u *updateCounter) taken() [][]resolver.Address {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := u.updates
	u.updates = nil
	return out
}
func (u *updateCounter) ResolverError(error) {}
func (u *updateCounter) ExitIdle()           {}
func (u *updateCounter) Close()              {}

// Resolver updates published while the channel is busy coalesce into one:
// the newest wins, the queue holds one hop whatever the rate, and Close
// behind a flood returns at once.
func TestResolverUpdatesCoalesce(t *testing.T) {
	u := &updateCounter{}
	c, r, _ := newTestChannel(t, WithDefaultServiceConfig(`{"loadBalancingConfig":[{"test_update_counter":{}}]}`),
		WithRegistry(lb.NewRegistry(u)))
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80")})
	c.Connect()
	settle(t, c)
	if got := u.taken(); len(got) != 1 {
		t.Fatalf("%d updates at start, want 1", len(got))
	}

	gate := make(chan struct{})
	c.ser.Schedule(func() { <-gate }) // the channel is busy
	const flood = 100_000
	var last resolver.State
	for i := range flood {
		last = resolver.State{Addresses: addrs(fmt.Sprintf("10.%d.%d.%d:80", i>>16, (i>>8)&255, i&255))}
		r.update(t, last)
	}
	r.cc.ReportError(errors.New("after the flood"))
	close(gate)
	settle(t, c)
	got := u.taken()
	if len(got) != 1 || got[0][0] != last.Addresses[0] {
		t.Fatalf("after %d updates while busy the policy got %d updates (last %v), want one: %v", flood, len(got), lastOf(got), last.Addresses)
	}

	// A flood racing Close: Close returns, and UpdateState then says so.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := r.cc.UpdateState(resolver.State{Addresses: addrs(fmt.Sprintf("10.1.0.%d:80", i&255))}); errors.Is(err, ErrClosed) {
				return
			}
		}
	}()
	c.Close()
	close(stop)
	wg.Wait()
	if err := r.cc.UpdateState(last); !errors.Is(err, ErrClosed) {
		t.Fatalf("UpdateState after Close = %v, want ErrClosed", err)
	}
}

func lastOf(u [][]resolver.Address) []resolver.Address {
	if len(u) == 0 {
		return nil
	}
	return u[len(u)-1]
}

// stuckResolver is a resolver whose Close blocks until released: it breaks
// the resolver contract, as a resolver waiting on a hung mount would.
type stuckResolver struct {
	testResolver
	release chan struct{}
	closed  atomic.Int32
}

func (r *stuckResolver) Build(tg resolver.Target, cc resolver.ClientConn, o resolver.BuildOptions) (resolver.Resolver, error) {
	if _, err := r.testResolver.Build(tg, cc, o); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *stuckResolver) Close() {
	<-r.release
	r.closed.Add(1)
}

// Neither Close nor idle entry waits for a resolver whose Close blocks.
func TestStuckResolverStallsNothing(t *testing.T) {
	u := &updateCounter{}
	r := &stuckResolver{release: make(chan struct{})}
	r.initial = &resolver.State{Addresses: addrs("10.0.0.1:80")}
	c, _, mock := newTestChannel(t, WithResolver(r), WithIdleTimeout(time.Minute),
		WithDefaultServiceConfig(`{"loadBalancingConfig":[{"test_update_counter":{}}]}`), WithRegistry(lb.NewRegistry(u)))
	c.Connect()
	settle(t, c)
	advance(t, c, mock, 2*time.Minute) // idle entry closes the resolver
	if c.State() != lb.Idle {
		t.Fatalf("state %v after the idle timeout, want IDLE", c.State())
	}
	c.Connect() // a second resolver, also stuck
	settle(t, c)

	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-guard(t).Done():
		t.Fatal("Close waited for a stuck resolver")
	}
	close(r.release)
	waitUntil(t, "both stuck resolvers have closed", func() bool { return r.closed.Load() == 2 })
	c.detached.Wait()
}
