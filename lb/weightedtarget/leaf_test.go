package weightedtarget

import (
	"errors"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// leafName is a test-only leaf policy: one SubConn per address, connected
// at once, round robin over the READY ones. Its state is its SubConns'
// aggregate. It publishes inline from every UpdateClientConnState, so it
// also exercises re-entrant reports.
const leafName = "test_rr"

type leafBuilder struct{}

func (leafBuilder) Name() string { return leafName }

func (leafBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &leaf{cc: cc, subConns: make(map[string]*leafSubConn)}
}

type leafSubConn struct {
	sc    lb.SubConn
	state lb.ConnectivityState
	err   error
	gone  bool
}

type leaf struct {
	cc lb.ClientConn
	// subConns is keyed by Addr: the tests never reuse an Addr with other
	// attributes.
	subConns map[string]*leafSubConn
	order    []*leafSubConn
	closed   bool
}

var errLeafNoAddresses = errors.New("test_rr: no addresses")

func (l *leaf) UpdateClientConnState(s lb.ClientConnState) error {
	want := make(map[string]bool, len(s.ResolverState.Addresses))
	for _, a := range s.ResolverState.Addresses {
		want[a.Addr] = true
	}
	for a, lsc := range l.subConns {
		if !want[a] {
			lsc.gone = true
			lsc.sc.Shutdown()
			delete(l.subConns, a)
		}
	}
	l.order = l.order[:0]
	for _, a := range s.ResolverState.Addresses {
		if lsc, ok := l.subConns[a.Addr]; ok {
			l.order = append(l.order, lsc)
			continue
		}
		lsc := &leafSubConn{state: lb.Connecting}
		sc, err := l.cc.NewSubConn([]resolver.Address{a}, lb.NewSubConnOptions{
			StateListener: func(st lb.SubConnState) { l.subConnState(lsc, st) },
		})
		if err != nil {
			return err
		}
		lsc.sc = sc
		l.subConns[a.Addr] = lsc
		l.order = append(l.order, lsc)
		sc.Connect()
	}
	if len(l.order) == 0 {
		l.cc.UpdateState(lb.State{ConnectivityState: lb.TransientFailure,
			Picker: lb.NewErrPicker(lb.TransientFailureError(errLeafNoAddresses))})
		return lb.ErrBadResolverState
	}
	l.publish()
	return nil
}

func (l *leaf) subConnState(lsc *leafSubConn, st lb.SubConnState) {
	if l.closed || lsc.gone || st.ConnectivityState == lb.Shutdown {
		return
	}
	lsc.state, lsc.err = st.ConnectivityState, st.ConnectionError
	l.publish()
}

func (l *leaf) publish() {
	var c lb.StateCounter
	var ready []lb.SubConn
	var lastErr error
	for _, lsc := range l.order {
		c.Add(lsc.state)
		if lsc.state == lb.Ready {
			ready = append(ready, lsc.sc)
		}
		if lsc.err != nil {
			lastErr = lsc.err
		}
	}
	s := lb.State{ConnectivityState: c.Aggregate()}
	switch s.ConnectivityState {
	case lb.Ready:
		p := &leafPicker{results: make([]lb.PickResult, len(ready))}
		for i, sc := range ready {
			p.results[i] = lb.PickResult{SubConn: sc}
		}
		s.Picker = p
	case lb.TransientFailure:
		s.Picker = lb.NewErrPicker(lb.TransientFailureError(lastErr))
	default:
		s.Picker = lb.NewQueuePicker()
	}
	l.cc.UpdateState(s)
}

func (l *leaf) ResolverError(error) {}

func (l *leaf) ExitIdle() {}

func (l *leaf) Close() {
	l.closed = true
	for _, lsc := range l.subConns {
		lsc.sc.Shutdown()
	}
}

// leafPicker round-robins over READY SubConns without allocating.
type leafPicker struct {
	results []lb.PickResult
	next    atomic.Uint32
}

func (p *leafPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	n := p.next.Add(1) - 1
	return p.results[int(n%uint32(len(p.results)))], nil
}
