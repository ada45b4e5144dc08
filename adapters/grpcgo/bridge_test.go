package grpcgo_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/lb"
	lbresolver "github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// probe is an lbkit policy that records what reaches it: it creates one
// SubConn for all the addresses of its first update, publishes a READY
// picker with a Done when that SubConn is READY, asks for re-resolution on
// a resolver error, and sets a 1 s timer at Build.
type probe struct {
	mu     sync.Mutex
	events []string
	addrs  []lbresolver.Address
	done   []error
}

func (p *probe) record(e string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, e)
}

func (p *probe) snapshot() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events)
}

func (p *probe) Name() string { return "probe" }

func (p *probe) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &probeBalancer{p: p, cc: cc}
	opts.Scheduler.AfterFunc(time.Second, func() { p.record("timer") })
	return b
}

type probeBalancer struct {
	p  *probe
	cc lb.ClientConn
	sc lb.SubConn
}

func (b *probeBalancer) UpdateClientConnState(s lb.ClientConnState) error {
	addrs := s.ResolverState.Addresses
	b.p.mu.Lock()
	b.p.addrs = slices.Clone(addrs)
	b.p.mu.Unlock()
	b.p.record("update")
	if len(addrs) == 0 {
		return lb.ErrBadResolverState
	}
	if b.sc != nil {
		return nil
	}
	var sc lb.SubConn
	sc, err := b.cc.NewSubConn(addrs, lb.NewSubConnOptions{StateListener: func(st lb.SubConnState) {
		b.p.record("subconn " + st.ConnectivityState.String())
		if st.ConnectivityState == lb.Ready {
			b.cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: probePicker{p: b.p, sc: sc}})
		}
	}})
	if err != nil {
		return err
	}
	b.sc = sc
	sc.Connect()
	b.cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
	return nil
}

func (b *probeBalancer) ResolverError(err error) {
	b.p.record("resolver error " + err.Error())
	b.cc.ResolveNow()
}

func (b *probeBalancer) ExitIdle() { b.p.record("exit idle") }

func (b *probeBalancer) Close() {
	b.p.record("close")
	if b.sc != nil {
		b.sc.Shutdown()
		b.sc.Shutdown() // harmless
	}
}

type probePicker struct {
	p  *probe
	sc lb.SubConn
}

func (pp probePicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	return lb.PickResult{SubConn: pp.sc, Done: func(di lb.DoneInfo) {
		pp.p.mu.Lock()
		defer pp.p.mu.Unlock()
		pp.p.done = append(pp.p.done, di.Err)
	}}, nil
}

// buildProbe builds the probe policy on a fake grpc-go ClientConn, with a
// mock clock.
func buildProbe(t *testing.T) (*probe, *fakeCC, balancer.Balancer, *serializers) {
	t.Helper()
	p := &probe{}
	sers := &serializers{clock: clock.NewMock()}
	bb := grpcgo.NewBuilder("probe_via_grpc", p, grpcgo.WithClock(sers.clock), grpcgo.WithSerializerObserver(sers.add))
	if bb.Name() != "probe_via_grpc" {
		t.Fatalf("Name() = %q", bb.Name())
	}
	cc := newFakeCC()
	bal := bb.Build(cc, balancer.BuildOptions{})
	return p, cc, bal, sers
}

func TestBridgeCallsAndSubConns(t *testing.T) {
	p, cc, bal, sers := buildProbe(t)
	if got := len(sers.all()); got != 1 {
		t.Fatalf("observer saw %d serializers, want 1", got)
	}

	// One endpoint with two addresses, carrying a weight: one lbkit
	// address with that weight; NewSubConn gets both grpc-go addresses,
	// attributes included.
	first := resolver.Address{Addr: "10.0.0.1:1", ServerName: "one"}
	second := resolver.Address{Addr: "10.0.0.2:2"}
	ep := grpcgo.SetEndpointWeight(resolver.Endpoint{Addresses: []resolver.Address{first, second}}, 7)
	if err := bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: resolver.State{Endpoints: []resolver.Endpoint{ep}}}); err != nil {
		t.Fatalf("UpdateClientConnState: %v", err)
	}
	p.mu.Lock()
	addrs := p.addrs
	p.mu.Unlock()
	if len(addrs) != 1 || addrs[0].Addr != first.Addr || addrs[0].ServerName != "one" {
		t.Fatalf("lbkit addresses: got %v, want one for the endpoint", addrs)
	}
	if w, ok := weight.Get(addrs[0]); !ok || w != 7 {
		t.Errorf("lbkit weight: got %d, %v; want 7", w, ok)
	}
	scs := cc.allSubConns()
	if len(scs) != 1 {
		t.Fatalf("got %d SubConns, want 1", len(scs))
	}
	if got := scs[0].addrs; len(got) != 2 || !got[0].Equal(first) || !got[1].Equal(second) {
		t.Errorf("NewSubConn addresses: got %v, want %v and %v", got, first, second)
	}
	if c, _ := scs[0].counts(); c != 1 {
		t.Errorf("Connect called %d times, want 1", c)
	}
	if s, _ := cc.lastState(); s.ConnectivityState != connectivity.Connecting {
		t.Errorf("state %v, want CONNECTING", s.ConnectivityState)
	}

	// States pass one to one; READY publishes a picker returning the
	// grpc-go SubConn, whose Done gets the RPC's error.
	scs[0].setState(connectivity.Connecting, nil)
	scs[0].setState(connectivity.Ready, nil)
	st := cc.waitForState(t, func(s balancer.State) bool { return s.ConnectivityState == connectivity.Ready })
	res, err := st.Picker.Pick(balancer.PickInfo{Ctx: context.Background()})
	if err != nil || res.SubConn != scs[0] {
		t.Fatalf("Pick: got %v, %v; want the fake SubConn", res.SubConn, err)
	}
	rpcErr := errors.New("rpc failed")
	res.Done(balancer.DoneInfo{Err: rpcErr})
	p.mu.Lock()
	done := slices.Clone(p.done)
	p.mu.Unlock()
	if len(done) != 1 || done[0] != rpcErr {
		t.Errorf("Done got %v, want [%v]", done, rpcErr)
	}

	// ResolverError reaches the policy, whose ResolveNow reaches grpc-go;
	// ExitIdle reaches the policy.
	bal.ResolverError(errors.New("no DNS"))
	bal.ExitIdle()
	cc.mu.Lock()
	resolveNow := cc.resolveNow
	cc.mu.Unlock()
	if resolveNow != 1 {
		t.Errorf("ResolveNow reached grpc-go %d times, want 1", resolveNow)
	}

	// The policy's timer runs on the injected clock, serialized.
	sers.advance(t, time.Second-time.Nanosecond)
	if slices.Contains(p.snapshot(), "timer") {
		t.Fatal("timer fired 1 ns early")
	}
	sers.advance(t, time.Nanosecond)

	// An empty update is a bad resolver state, as grpc-go knows it.
	if err := bal.UpdateClientConnState(balancer.ClientConnState{}); err != balancer.ErrBadResolverState {
		t.Errorf("empty update: got %v, want balancer.ErrBadResolverState", err)
	}

	bal.Close()
	if _, n := scs[0].counts(); n != 1 {
		t.Errorf("Shutdown reached grpc-go %d times, want 1", n)
	}
	// After Close nothing reaches the policy and nothing fails.
	scs[0].setState(connectivity.Shutdown, nil)
	bal.ExitIdle()
	bal.ResolverError(errors.New("late"))
	if err := bal.UpdateClientConnState(balancer.ClientConnState{}); err == nil {
		t.Error("UpdateClientConnState after Close: got nil error")
	}
	bal.Close()

	want := []string{
		"update",
		"subconn CONNECTING", "subconn READY",
		"resolver error no DNS", "exit idle",
		"timer",
		"update",
		"close",
	}
	if got := p.snapshot(); !slices.Equal(got, want) {
		t.Errorf("calls into the policy:\n got %q\nwant %q", got, want)
	}
}

// A READY pick through the bridge allocates nothing.
func TestPickAllocatesNothing(t *testing.T) {
	bb := grpcgo.NewBuilder("wrr_allocs", lb.Get("weighted_round_robin"))
	cc := newFakeCC()
	bal := bb.Build(cc, balancer.BuildOptions{})
	defer bal.Close()
	var addrs []resolver.Address
	for _, a := range []string{"10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1"} {
		addrs = append(addrs, grpcgo.SetWeight(resolver.Address{Addr: a}, 2))
	}
	if err := bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: resolver.State{Addresses: addrs}}); err != nil {
		t.Fatal(err)
	}
	cc.readyAll()
	p := cc.waitForState(t, func(s balancer.State) bool { return s.ConnectivityState == connectivity.Ready }).Picker
	info := balancer.PickInfo{Ctx: context.Background(), FullMethodName: "/s/m"}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := p.Pick(info); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("READY pick: %v allocations, want 0", n)
	}
}

func TestParseConfig(t *testing.T) {
	b := balancer.Get(grpcgo.PriorityName)
	cp, ok := b.(balancer.ConfigParser)
	if !ok {
		t.Fatalf("%s is not a ConfigParser", grpcgo.PriorityName)
	}
	// Children name lbkit policies; a grpc-go-only name is not one.
	if _, err := cp.ParseConfig([]byte(`{"children": {"p0": {"config": [{"pick_first": {}}]}}, "priorities": ["p0"]}`)); err != nil {
		t.Errorf("valid config: %v", err)
	}
	_, err := cp.ParseConfig([]byte(`{"children": {"p0": {"config": [{"rls_experimental": {}}]}}, "priorities": ["p0"]}`))
	var ce *lb.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `children["p0"].config`) {
		t.Errorf("child naming a policy lbkit lacks: got %v, want a *lb.ConfigError at children[\"p0\"].config", err)
	}

	// A config parsed by another builder is refused.
	bal := b.Build(newFakeCC(), balancer.BuildOptions{})
	defer bal.Close()
	foreign, err := balancer.Get("pick_first").(balancer.ConfigParser).ParseConfig([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := bal.UpdateClientConnState(balancer.ClientConnState{BalancerConfig: foreign}); err == nil {
		t.Error("UpdateClientConnState with grpc-go's pick_first config: got nil error")
	}
}

func TestDefaultRegistrations(t *testing.T) {
	for _, name := range []string{grpcgo.PickFirstName, grpcgo.PriorityName, grpcgo.WeightedTargetName, grpcgo.WeightedRoundRobinName} {
		b := balancer.Get(name)
		if b == nil {
			t.Errorf("%s is not registered with grpc-go", name)
			continue
		}
		if b.Name() != name {
			t.Errorf("builder registered as %s is named %s", name, b.Name())
		}
	}
	// grpc-go's own policies are untouched.
	for _, name := range []string{"pick_first", "round_robin"} {
		if _, ours := balancer.Get(name).(*grpcgo.Builder); ours {
			t.Errorf("%s was replaced by an lbkit policy", name)
		}
	}
}
