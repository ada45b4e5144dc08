package outlierdetection

import (
	"errors"
	"slices"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// errEjected is the connection error the child sees while an address is
// ejected.
var errEjected = errors.New("outlierdetection: address ejected as an outlier")

// subConn is A50's subchannel wrapper: the SubConn the child policy holds.
// It passes Connect and Shutdown to the real SubConn and the real SubConn's
// states to the child's listener, except while ejected: then the child sees
// TRANSIENT_FAILURE and nothing else until un-ejection, which reports the
// latest real state.
//
// Everything but counter and record is used only inside the tree's
// serialized calls. counter is read by pickers' Done calls from any
// goroutine.
type subConn struct {
	lb.SubConn // the real SubConn

	b        *odBalancer
	addr     string // the single address; "" when created with several
	listener func(lb.SubConnState)

	// entry is the map entry the wrapper is listed in, nil when its
	// address has none (or it has several addresses).
	entry *entry
	// counter is entry's call counter, or nil: what record counts into.
	counter atomic.Pointer[callCounter]
	// record is the Done the picker hands out: built once, so a pick
	// does not allocate.
	record func(lb.DoneInfo)

	latest   lb.SubConnState // the real SubConn's latest state
	ejected  bool
	shutdown bool
}

func newSubConn(b *odBalancer, addrs []resolver.Address, listener func(lb.SubConnState)) *subConn {
	w := &subConn{b: b, listener: listener, latest: lb.SubConnState{ConnectivityState: lb.Idle}}
	if len(addrs) == 1 {
		w.addr = addrs[0].Addr
	}
	w.record = func(di lb.DoneInfo) {
		if c := w.counter.Load(); c != nil && !errors.Is(di.Err, lb.ErrRequestNotSent) {
			c.record(di.Err != nil)
		}
	}
	return w
}

// attach lists w in e (nil detaches it), and ejects or un-ejects it to match
// e's state: a wrapper outside every entry is never ejected.
func (w *subConn) attach(e *entry) {
	if w.entry == e {
		return
	}
	if w.entry != nil {
		w.entry.subConns = slices.DeleteFunc(w.entry.subConns, func(x *subConn) bool { return x == w })
	}
	w.entry = e
	if e == nil {
		w.counter.Store(nil)
		w.uneject()
		return
	}
	e.subConns = append(e.subConns, w)
	w.counter.Store(e.counter)
	if e.ejected {
		w.eject()
	} else {
		w.uneject()
	}
}

// stateChanged is the real SubConn's listener.
func (w *subConn) stateChanged(s lb.SubConnState) {
	if s.ConnectivityState == lb.Shutdown {
		w.shutdown = true
		w.attach(nil)
		w.b.subConns = slices.DeleteFunc(w.b.subConns, func(x *subConn) bool { return x == w })
		w.listener(s)
		return
	}
	w.latest = s
	if !w.ejected {
		w.listener(s)
	}
}

// eject makes the child see TRANSIENT_FAILURE until uneject.
func (w *subConn) eject() {
	if w.ejected {
		return
	}
	w.ejected = true
	if !w.shutdown {
		w.listener(lb.SubConnState{ConnectivityState: lb.TransientFailure, ConnectionError: errEjected})
	}
}

// uneject reports the real SubConn's latest state to the child and resumes
// passing its states along.
func (w *subConn) uneject() {
	if !w.ejected {
		return
	}
	w.ejected = false
	if !w.shutdown {
		w.listener(w.latest)
	}
}
