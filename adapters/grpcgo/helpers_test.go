package grpcgo_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// hangGuard bounds every wait of a test: reaching it is a failure, never
// the expected outcome.
const hangGuard = 20 * time.Second

// The test service: one unary method that answers with the server's name.
// Messages are raw bytes (rawCodec), so no generated code is needed.
const whoMethod = "/lbkit.test.Who/Name"

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	p := v.(*[]byte)
	*p = append((*p)[:0], data...)
	return nil
}
func (rawCodec) Name() string { return "lbkit-raw" }

// whoServer answers with its name, or with INTERNAL while *failing is
// set.
type whoServer struct {
	name    []byte
	failing *atomic.Bool
}

var whoDesc = grpc.ServiceDesc{
	ServiceName: "lbkit.test.Who",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Name",
		Handler: func(srv any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			s := srv.(*whoServer)
			if s.failing.Load() {
				return nil, status.Error(codes.Internal, string(s.name)+" is failing")
			}
			name := s.name
			return &name, nil
		},
	}},
}

// backend is a gRPC server on 127.0.0.1 that can be stopped and restarted
// on the same port.
type backend struct {
	tb   testing.TB
	name string
	addr string

	// failing makes the server answer every RPC with INTERNAL.
	failing atomic.Bool

	mu     sync.Mutex
	srv    *grpc.Server
	served chan struct{} // closed when Serve returns
}

// startBackend starts a server named name on a free loopback port. It is
// stopped when the test ends.
func startBackend(tb testing.TB, name string) *backend {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	b := &backend{tb: tb, name: name, addr: lis.Addr().String()}
	b.serve(lis)
	tb.Cleanup(b.stop)
	return b
}

func (b *backend) serve(lis net.Listener) {
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	srv.RegisterService(&whoDesc, &whoServer{name: []byte(b.name), failing: &b.failing})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	b.mu.Lock()
	b.srv, b.served = srv, served
	b.mu.Unlock()
}

// stop closes the listener and every connection at once.
func (b *backend) stop() {
	b.mu.Lock()
	srv, served := b.srv, b.served
	b.srv, b.served = nil, nil
	b.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Stop()
	<-served
}

// restart serves again on the same address.
func (b *backend) restart() {
	b.tb.Helper()
	lis, err := net.Listen("tcp", b.addr)
	if err != nil {
		b.tb.Fatalf("listen again on %s: %v", b.addr, err)
	}
	b.serve(lis)
}

func (b *backend) address() resolver.Address { return resolver.Address{Addr: b.addr} }

// blackhole accepts TCP connections and never answers: a gRPC client
// connecting to it stays CONNECTING until its connect deadline.
type blackhole struct {
	addr  string
	lis   net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

func startBlackhole(tb testing.TB) *blackhole {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	h := &blackhole{addr: lis.Addr().String(), lis: lis, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		_ = lis.Close()
		<-h.done
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			_ = c.Close()
		}
	})
	return h
}

// dialCounter counts the client's connection attempts per address and
// lets a test wait for more of them.
type dialCounter struct {
	mu      sync.Mutex
	total   int
	changed chan struct{}
}

func newDialCounter() *dialCounter { return &dialCounter{changed: make(chan struct{})} }

func (d *dialCounter) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.total++
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", addr)
}

func (d *dialCounter) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total
}

// waitFor waits until at least n connection attempts have been made.
func (d *dialCounter) waitFor(tb testing.TB, n int) {
	tb.Helper()
	timeout := time.After(hangGuard)
	for {
		d.mu.Lock()
		total, ch := d.total, d.changed
		d.mu.Unlock()
		if total >= n {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			tb.Fatalf("waiting for %d connection attempts: got %d", n, total)
		}
	}
}

// fastBackoff keeps reconnections quick; the long MinConnectTimeout keeps a
// handshake with a blackhole pending for the whole test.
var fastBackoff = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1, MaxDelay: 10 * time.Millisecond},
	MinConnectTimeout: time.Minute,
}

// client is a grpc.ClientConn on a manual resolver.
type client struct {
	*grpc.ClientConn
	r     *manual.Resolver
	dials *dialCounter
}

// newClient creates a channel whose resolver publishes state and whose
// default service config is serviceConfig, and starts connecting.
func newClient(tb testing.TB, state resolver.State, serviceConfig string) *client {
	tb.Helper()
	r := manual.NewBuilderWithScheme("lbkit-test")
	r.InitialState(state)
	d := newDialCounter()
	cc, err := grpc.NewClient(r.Scheme()+":///backends",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(serviceConfig),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})),
		grpc.WithConnectParams(fastBackoff),
		grpc.WithContextDialer(d.dial),
	)
	if err != nil {
		tb.Fatalf("grpc.NewClient: %v", err)
	}
	tb.Cleanup(func() { _ = cc.Close() })
	cc.Connect()
	return &client{ClientConn: cc, r: r, dials: d}
}

// who makes one RPC and returns the name of the server that answered.
func (c *client) who(ctx context.Context, opts ...grpc.CallOption) (string, error) {
	in, out := []byte{}, []byte(nil)
	if err := c.Invoke(ctx, whoMethod, &in, &out, opts...); err != nil {
		return "", err
	}
	return string(out), nil
}

// mustWho makes a wait-for-ready RPC that must succeed.
func (c *client) mustWho(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	name, err := c.who(ctx, grpc.WaitForReady(true))
	if err != nil {
		tb.Fatalf("RPC: %v", err)
	}
	return name
}

// count makes n wait-for-ready RPCs and counts the servers that answered.
func (c *client) count(tb testing.TB, n int) map[string]int {
	tb.Helper()
	counts := make(map[string]int)
	for range n {
		counts[c.mustWho(tb)]++
	}
	return counts
}

// waitUntilServed makes wait-for-ready RPCs until every server in names
// has answered one. RPCs that fail with UNAVAILABLE are retried: one sent
// on a connection the server just closed fails that way before the
// channel notices. It fails the test after hangGuard.
func (c *client) waitUntilServed(tb testing.TB, names ...string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	missing := slices.Clone(names)
	for len(missing) > 0 {
		got, err := c.who(ctx, grpc.WaitForReady(true))
		switch {
		case status.Code(err) == codes.Unavailable:
			continue
		case err != nil:
			tb.Fatalf("waiting for servers %v to answer: %v", missing, err)
		}
		missing = slices.DeleteFunc(missing, func(n string) bool { return n == got })
	}
}

// waitForState waits until the channel reports want.
func (c *client) waitForState(tb testing.TB, want connectivity.State) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for s := c.GetState(); s != want; s = c.GetState() {
		if !c.WaitForStateChange(ctx, s) {
			tb.Fatalf("channel state is %v; waited for %v", s, want)
		}
	}
}

// stateLog records every state the channel reports, from now until the
// test ends.
type stateLog struct {
	mu      sync.Mutex
	states  []connectivity.State
	changed chan struct{} // closed and replaced on every record
}

func watchStates(tb testing.TB, c *client) *stateLog {
	l := &stateLog{changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			s := c.GetState()
			l.mu.Lock()
			l.states = append(l.states, s)
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
			if !c.WaitForStateChange(ctx, s) {
				return
			}
		}
	}()
	tb.Cleanup(func() { cancel(); <-done })
	return l
}

// waitLast waits until the last recorded state is want, and returns its
// index.
func (l *stateLog) waitLast(tb testing.TB, want connectivity.State) int {
	tb.Helper()
	timeout := time.After(hangGuard)
	for {
		l.mu.Lock()
		n, ch := len(l.states), l.changed
		last := connectivity.State(-1)
		if n > 0 {
			last = l.states[n-1]
		}
		l.mu.Unlock()
		if last == want {
			return n - 1
		}
		select {
		case <-ch:
		case <-timeout:
			tb.Fatalf("state log: last state is %v; waited for %v", last, want)
		}
	}
}

func (l *stateLog) since(i int) []connectivity.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.states[i:])
}

// serializers collects the serializers of the balancers a Builder builds
// (through WithSerializerObserver) and advances their mock clock the way
// lbtest.Harness.Advance does.
type serializers struct {
	clock *clock.Mock
	mu    sync.Mutex
	list  []*lb.Serializer
}

func (s *serializers) add(ser *lb.Serializer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, ser)
}

func (s *serializers) all() []*lb.Serializer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// advance moves the mock clock by d, one timer deadline at a time, waiting
// at each deadline until every due timer callback and its consequences
// inside the balancers have run.
func (s *serializers) advance(tb testing.TB, d time.Duration) {
	tb.Helper()
	lbtest.AdvanceSerializers(tb, s.clock, d, s.all()...)
}

// settle waits until every balancer has handled what it was given, without
// moving the clock.
func (s *serializers) settle(tb testing.TB) {
	tb.Helper()
	lbtest.AdvanceSerializers(tb, s.clock, 0, s.all()...)
}
