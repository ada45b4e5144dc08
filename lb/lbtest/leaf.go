package lbtest

import (
	"errors"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// NewLeafBuilder returns a simple leaf policy for testing parent policies
// (priority, weighted_target, your own), registered by the caller under
// name:
//
//   - one SubConn per address (by Addr), connected at once;
//   - its state is the SubConns' aggregate ([lb.StateCounter]);
//   - READY: round robin over the READY SubConns, without allocating;
//   - TRANSIENT_FAILURE: an error picker naming the last connection error,
//     and a ResolveNow for each failure;
//   - an empty address list: TRANSIENT_FAILURE and [lb.ErrBadResolverState];
//   - ExitIdle reconnects IDLE SubConns; a resolver error with no address
//     reports TRANSIENT_FAILURE.
//
// It publishes inline from UpdateClientConnState, so it also exercises a
// parent's handling of re-entrant reports. Like every balancer, it must be
// called serially.
func NewLeafBuilder(name string) lb.Builder { return leafBuilder{name: name} }

type leafBuilder struct{ name string }

func (b leafBuilder) Name() string { return b.name }

func (b leafBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &leaf{name: b.name, cc: cc, subConns: make(map[string]*leafSubConn)}
}

type leafSubConn struct {
	sc    lb.SubConn
	state lb.ConnectivityState
	err   error
	gone  bool
}

type leaf struct {
	name     string
	cc       lb.ClientConn
	subConns map[string]*leafSubConn // by Addr
	order    []*leafSubConn
	closed   bool
}

func (l *leaf) UpdateClientConnState(s lb.ClientConnState) error {
	if l.closed {
		return nil
	}
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
			Picker: lb.NewErrPicker(lb.TransientFailureError(errors.New(l.name + ": no addresses")))})
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
	if st.ConnectivityState == lb.TransientFailure {
		l.cc.ResolveNow()
	}
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

func (l *leaf) ResolverError(err error) {
	if !l.closed && len(l.order) == 0 {
		l.cc.UpdateState(lb.State{ConnectivityState: lb.TransientFailure,
			Picker: lb.NewErrPicker(lb.TransientFailureError(err))})
	}
}

func (l *leaf) ExitIdle() {
	changed := false
	for _, lsc := range l.order {
		if lsc.state == lb.Idle {
			lsc.state = lb.Connecting
			lsc.sc.Connect()
			changed = true
		}
	}
	if changed && !l.closed {
		l.publish()
	}
}

func (l *leaf) Close() {
	l.closed = true
	for _, lsc := range l.subConns {
		lsc.sc.Shutdown()
	}
}

// leafPicker round-robins over READY SubConns, starting with the first,
// without allocating.
type leafPicker struct {
	results []lb.PickResult
	next    atomic.Uint32
}

func (p *leafPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	n := p.next.Add(1) - 1
	return p.results[int(n%uint32(len(p.results)))], nil
}
