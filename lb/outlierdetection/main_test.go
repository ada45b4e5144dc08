package outlierdetection

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/weightedtarget"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testRegistry holds the test children (lbtest.NewRegistry and
// addrPickerName), pick_first, and the parents outlier_detection, priority
// and weighted_target over them, for tests that parse configs without an
// env.
var testRegistry = lbtest.NewRegistry(addrPickerBuilder{}, pickfirst.Builder{}, roundrobin.Builder{},
	Builder{}, priority.NewBuilder(), weightedtarget.Builder{})

// addrPickerName is a test child policy whose picker picks the address a
// request's context names (see withAddr): one SubConn per address,
// connected at once; a pick fails unless the child sees that SubConn READY.
// It records every state its SubConns report, so tests can see what the
// child sees.
const addrPickerName = "test_addr_picker"

type addrKey struct{}

// withAddr returns a context whose picks, with the addrPicker child, go to
// addr.
func withAddr(addr string) context.Context {
	return context.WithValue(context.Background(), addrKey{}, addr)
}

type addrPickerBuilder struct{}

func (addrPickerBuilder) Name() string { return addrPickerName }
func (addrPickerBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &addrPicker{cc: cc, subConns: make(map[string]*addrSubConn)}
}

type addrSubConn struct {
	sc    lb.SubConn
	state lb.ConnectivityState
}

// addrPicker is the addrPickerName policy.
type addrPicker struct {
	cc       lb.ClientConn
	subConns map[string]*addrSubConn
	// seen records, per address, every state the child heard, in order.
	seen   map[string][]lb.ConnectivityState
	closed bool
}

func (p *addrPicker) UpdateClientConnState(s lb.ClientConnState) error {
	if ref, ok := attributes.Get(s.ResolverState.Attributes, childRefKey); ok {
		ref.p = p
	}
	want := make(map[string]bool)
	for _, a := range s.ResolverState.Addresses {
		want[a.Addr] = true
		if p.subConns[a.Addr] != nil {
			continue
		}
		asc := &addrSubConn{state: lb.Idle}
		addr := a.Addr
		sc, err := p.cc.NewSubConn([]resolver.Address{a}, lb.NewSubConnOptions{StateListener: func(st lb.SubConnState) {
			if p.seen == nil {
				p.seen = make(map[string][]lb.ConnectivityState)
			}
			p.seen[addr] = append(p.seen[addr], st.ConnectivityState)
			if p.subConns[addr] == asc {
				asc.state = st.ConnectivityState
				p.publish()
			}
		}})
		if err != nil {
			return err
		}
		asc.sc = sc
		p.subConns[addr] = asc
		sc.Connect()
	}
	for addr, asc := range p.subConns {
		if !want[addr] {
			asc.sc.Shutdown()
			delete(p.subConns, addr)
		}
	}
	p.publish()
	return nil
}

// childState returns the state the child last heard for addr's SubConn.
func (p *addrPicker) childState(addr string) lb.ConnectivityState {
	if asc := p.subConns[addr]; asc != nil {
		return asc.state
	}
	return lb.Shutdown
}

func (p *addrPicker) publish() {
	if p.closed {
		return
	}
	ready := make(map[string]lb.SubConn)
	for addr, asc := range p.subConns {
		if asc.state == lb.Ready {
			ready[addr] = asc.sc
		}
	}
	state := lb.Connecting
	if len(ready) > 0 {
		state = lb.Ready
	}
	p.cc.UpdateState(lb.State{ConnectivityState: state, Picker: addrPick(ready)})
}

func (p *addrPicker) ResolverError(error) {}
func (p *addrPicker) ExitIdle()           {}
func (p *addrPicker) Close() {
	p.closed = true
	for _, asc := range p.subConns {
		asc.sc.Shutdown()
	}
}

// addrPick picks the READY SubConn of the address in the context.
type addrPick map[string]lb.SubConn

var errNotReady = errors.New("test: address not READY for the child")

func (m addrPick) Pick(info lb.PickInfo) (lb.PickResult, error) {
	addr, _ := info.Ctx.Value(addrKey{}).(string)
	if sc, ok := m[addr]; ok {
		return lb.PickResult{SubConn: sc}, nil
	}
	return lb.PickResult{}, lb.TransientFailureError(fmt.Errorf("%w: %q", errNotReady, addr))
}

// childRef carries a test's handle on its addrPicker child down the tree,
// in the update's attributes; the child fills it in.
type childRef struct{ p *addrPicker }

var childRefKey = attributes.NewKey[*childRef]("lbkit/outlierdetection_test.child")

// env is one outlier detection balancer on an lbtest.Parent, over the test
// children of its own registry (lbtest's and addrPickerName).
type env struct {
	t   lbtest.TB
	h   *lbtest.Parent
	ref *childRef
}

func newEnv(t lbtest.TB, opts ...lbtest.Option) *env {
	t.Helper()
	p := lbtest.NewParent(t, opts...)
	p.Registry().Register(addrPickerBuilder{})
	p.Build(Builder{})
	return &env{t: t, h: p, ref: &childRef{}}
}

func (e *env) b() *odBalancer { return e.h.Balancer.(*odBalancer) }

func mustParse(tb lbtest.TB, js string) *Config {
	tb.Helper()
	return lbtest.ParseConfig(tb, testRegistry, Name, js).(*Config)
}

// update sends cfgJSON and the addresses, then makes every new SubConn
// READY.
func (e *env) update(cfgJSON string, names ...string) {
	e.t.Helper()
	before := len(e.h.CC.SubConns())
	if err := e.updateErr(e.h.ParseConfig(Name, cfgJSON), names...); err != nil {
		e.t.Fatalf("UpdateClientConnState: %v", err)
	}
	for _, sc := range e.h.CC.SubConns()[before:] {
		sc.Ready()
	}
}

// call sends one request to addr through the latest picker and ends it
// with a failure or a success. It returns false if the pick failed (the
// child does not see addr READY).
func (e *env) call(addr string, fail bool) bool {
	e.t.Helper()
	r, err := e.h.State().Picker.Pick(lb.PickInfo{Ctx: withAddr(addr)})
	if err != nil {
		return false
	}
	if sc := r.SubConn.(*lbtest.SubConn); sc.Addresses()[0].Addr != addr {
		e.t.Fatalf("pick for %s returned %v", addr, sc)
	}
	if r.Done != nil {
		var err error
		if fail {
			err = errCallFailed
		}
		r.Done(lb.DoneInfo{Err: err})
	}
	return true
}

func (e *env) updateErr(cfg lb.Config, names ...string) error {
	e.t.Helper()
	return e.h.UpdateClientConnState(lb.ClientConnState{
		ResolverState: resolver.State{
			Addresses:  lbtest.Addresses(names...),
			Attributes: attributes.With(attributes.Attributes{}, childRefKey, e.ref),
		},
		BalancerConfig: cfg,
	})
}

var errCallFailed = errors.New("test: call failed")

// calls sends n requests to addr, failing the first failures of them.
func (e *env) calls(addr string, n, failures int) {
	e.t.Helper()
	for i := range n {
		if !e.call(addr, i < failures) {
			e.t.Fatalf("call %d to %s: pick failed", i, addr)
		}
	}
}

// callsFailingOne sends n requests to each of addrs, failing the first
// failures of those to bad and none to the others.
func (e *env) callsFailingOne(n int, bad string, failures int, addrs ...string) {
	e.t.Helper()
	for _, a := range addrs {
		failures := failures
		if a != bad {
			failures = 0
		}
		e.calls(a, n, failures)
	}
}

// ejected returns the ejected addresses, in sweep order.
func (e *env) ejected() string {
	var out []string
	e.h.Do(func() {
		for _, en := range e.b().order {
			if en.ejected {
				out = append(out, en.addr)
			}
		}
	})
	return strings.Join(out, ",")
}

func (e *env) wantEjected(want string) {
	e.t.Helper()
	if got := e.ejected(); got != want {
		e.t.Fatalf("at +%v: ejected [%s], want [%s]", e.elapsed(), got, want)
	}
}

func (e *env) elapsed() time.Duration { return e.h.Clock.Now().Sub(time.Unix(0, 0)) }

// childSees returns the state the addrPicker child last heard for addr.
func (e *env) childSees(addr string) lb.ConnectivityState {
	var s lb.ConnectivityState
	e.h.Do(func() { s = e.ref.p.childState(addr) })
	return s
}
