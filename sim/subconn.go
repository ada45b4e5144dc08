package sim

import (
	"errors"
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// subConn is a simulated connection from one client to one backend. Its
// connect succeeds after the backend's connectDelay unless the backend is
// stopped or refusing then; a refused connect reports TRANSIENT_FAILURE and,
// after the client's reconnectDelay, IDLE (a fixed delay standing in for the
// channel's backoff, which this stage does not run). States reach the
// policy's listener as events, in order, never re-entrantly.
type subConn struct {
	c        *client
	b        *backend
	listener func(lb.SubConnState)
	state    lb.ConnectivityState
	gen      uint64 // counts transitions: an event made before one is stale
	idx      int    // index in b.conns
}

var _ lb.SubConn = (*subConn)(nil)

// setState moves the SubConn to st and queues the listener's call.
func (sc *subConn) setState(st lb.ConnectivityState, err error) {
	sc.state = st
	sc.gen++
	s := lb.SubConnState{ConnectivityState: st, ConnectionError: err}
	l := sc.listener
	sc.c.run.e.at(sc.c.run.e.now, evFunc, 0, func() { l(s) })
}

// Connect starts a connection attempt when IDLE.
func (sc *subConn) Connect() {
	if sc.state != lb.Idle {
		return
	}
	sc.setState(lb.Connecting, nil)
	e := &sc.c.run.e
	e.at(e.now+sc.b.spec.connectDelay, evConnect, sc.gen, sc)
}

// connected ends the attempt that gen started.
func (sc *subConn) connected(gen uint64) {
	if gen != sc.gen {
		return
	}
	e := &sc.c.run.e
	if !sc.b.refusing(e.now) {
		sc.setState(lb.Ready, nil)
		return
	}
	sc.setState(lb.TransientFailure, fmt.Errorf("%s: %w", sc.b.spec.name, ErrRefused))
	failed := sc.gen
	e.at(e.now+sc.c.spec.reconnectDelay, evFunc, 0, func() {
		if sc.gen == failed {
			sc.setState(lb.Idle, nil)
		}
	})
}

// lose breaks a READY connection: the backend stopped.
func (sc *subConn) lose() {
	if sc.state == lb.Ready {
		sc.setState(lb.Idle, nil)
	}
}

// Shutdown closes the SubConn for good.
func (sc *subConn) Shutdown() {
	if sc.state == lb.Shutdown {
		return
	}
	sc.setState(lb.Shutdown, nil)
	conns := sc.b.conns
	last := len(conns) - 1
	conns[sc.idx] = conns[last]
	conns[sc.idx].idx = sc.idx
	conns[last] = nil
	sc.b.conns = conns[:last]
}

// ErrRefused is a SubConn's connection error while its backend refuses
// connections or is stopped.
var ErrRefused = errors.New("sim: connection refused")

var errUnknownAddress = errors.New("sim: no backend has this address")

// NewSubConn makes a SubConn to the backend named by addrs[0].Addr.
func (c *client) NewSubConn(addrs []resolver.Address, opts lb.NewSubConnOptions) (lb.SubConn, error) {
	if opts.StateListener == nil {
		return nil, errors.New("sim: NewSubConn: StateListener is nil")
	}
	if len(addrs) == 0 {
		return nil, errors.New("sim: NewSubConn: no address")
	}
	b, ok := c.run.byName[addrs[0].Addr]
	if !ok {
		return nil, fmt.Errorf("%w: %q", errUnknownAddress, addrs[0].Addr)
	}
	sc := &subConn{c: c, b: b, listener: opts.StateListener, state: lb.Idle, idx: len(b.conns)}
	b.conns = append(b.conns, sc)
	return sc, nil
}

// UpdateState takes the tree's new picker; requests waiting for one are
// picked again in a later event, never inside the policy's call.
func (c *client) UpdateState(s lb.State) {
	c.picker = s.Picker
	c.state = s.ConnectivityState
	if len(c.waiting) > 0 && !c.repickQueued {
		c.repickQueued = true
		c.run.e.at(c.run.e.now, evFunc, 0, c.repickFn)
	}
}

// ResolveNow does nothing: the simulated resolver's state changes only
// with the fault timeline.
func (c *client) ResolveNow() {}

// Target returns the client's target, "sim:///" and its name.
func (c *client) Target() string { return "sim:///" + c.spec.name }
