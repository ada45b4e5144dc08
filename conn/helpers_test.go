package conn

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// guard bounds a wait; it only turns a hang into a failure.
func guard(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testServer is a TCP server on 127.0.0.1 that accepts connections and
// holds them open until stopped.
type testServer struct {
	t    testing.TB
	addr string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
	wg    sync.WaitGroup
}

func startServer(t testing.TB) *testServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &testServer{t: t, addr: ln.Addr().String()}
	s.serve(ln)
	t.Cleanup(s.stop)
	return s
}

func (s *testServer) serve(ln net.Listener) {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.ln != ln { // stopped between Accept and here
				c.Close()
				s.mu.Unlock()
				return
			}
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}()
}

// stop closes the listener and every accepted connection.
func (s *testServer) stop() {
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
		s.ln = nil
	}
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
}

// restart listens on the same address again.
func (s *testServer) restart() {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("relisten on %s: %v", s.addr, err)
	}
	s.serve(ln)
}

// testResolver is a resolver whose updates the test pushes.
type testResolver struct {
	mu         sync.Mutex
	cc         resolver.ClientConn
	initial    *resolver.State
	builds     int
	resolveNow atomic.Int32
}

func (r *testResolver) Scheme() string { return "test" }

func (r *testResolver) Build(_ resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	r.mu.Lock()
	r.cc = cc
	r.builds++
	init := r.initial
	r.mu.Unlock()
	if init != nil {
		cc.UpdateState(*init)
	}
	return r, nil
}

func (r *testResolver) ResolveNow() { r.resolveNow.Add(1) }
func (r *testResolver) Close()      {}

func (r *testResolver) update(t testing.TB, s resolver.State) {
	t.Helper()
	r.mu.Lock()
	cc := r.cc
	r.initial = &s
	r.mu.Unlock()
	if cc == nil {
		return // delivered at Build
	}
	if err := cc.UpdateState(s); err != nil {
		t.Fatalf("UpdateState: %v", err)
	}
}

func addrs(ss ...string) []resolver.Address {
	out := make([]resolver.Address, len(ss))
	for i, s := range ss {
		out[i] = resolver.Address{Addr: s}
	}
	return out
}

// countingDialer counts dials per address.
type countingDialer struct {
	TCPDialer
	mu    sync.Mutex
	dials map[string]int
}

func (d *countingDialer) Dial(ctx context.Context, a resolver.Address) (Conn, error) {
	d.mu.Lock()
	if d.dials == nil {
		d.dials = map[string]int{}
	}
	d.dials[a.Addr]++
	d.mu.Unlock()
	return d.TCPDialer.Dial(ctx, a)
}

func (d *countingDialer) count(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials[addr]
}

// newTestChannel returns a channel on a mock clock fed by a test resolver.
func newTestChannel(t testing.TB, opts ...Option) (*Channel, *testResolver, *clock.Mock) {
	t.Helper()
	r := &testResolver{}
	mock := clock.NewMock()
	c, err := New("test:///svc", append([]Option{WithResolver(r), WithClock(mock), WithRandSeed(1, 2)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, r, mock
}

// settle waits until the channel's serializer has nothing queued and no
// timer due.
func settle(t testing.TB, c *Channel) {
	t.Helper()
	if err := c.Settle(guard(t)); err != nil {
		t.Fatalf("settle: %v", err)
	}
}

// advance moves the mock clock one timer deadline at a time, settling at
// each, as lbtest.Harness.Advance does.
func advance(t testing.TB, c *Channel, m *clock.Mock, d time.Duration) {
	t.Helper()
	target := m.Now().Add(d)
	for {
		next, ok := c.ser.NextDeadline()
		if !ok || next.After(target) {
			break
		}
		if step := next.Sub(m.Now()); step > 0 {
			m.Add(step)
		}
		settle(t, c)
	}
	if step := target.Sub(m.Now()); step > 0 {
		m.Add(step)
	}
	settle(t, c)
}

// waitState waits until the channel reports want.
func waitState(t testing.TB, c *Channel, want lb.ConnectivityState) {
	t.Helper()
	ctx := guard(t)
	for s := c.State(); s != want; s = c.State() {
		if !c.WaitForStateChange(ctx, s) {
			t.Fatalf("channel state %v, want %v (timed out)", s, want)
		}
	}
}

// pickAddr picks once (wait-for-ready) and returns the chosen address.
func pickAddr(t testing.TB, c *Channel) string {
	t.Helper()
	r, err := c.Pick(guard(t), PickOptions{WaitForReady: true})
	if err != nil {
		t.Fatalf("Pick: %v", err)
	}
	if r.Done != nil {
		r.Done(lb.DoneInfo{})
	}
	return r.SubConn.Address().Addr
}
