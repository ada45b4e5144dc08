package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/connstate"
	"github.com/lbkit/lbkit/lb/resolver"
)

// subConn is one client's connection to one backend. Its states come
// from lbkit's own connection state machine (lb/connstate, as in conn):
// connecting, the attempt's timeout, exponential backoff after a failure,
// and, when the client checks health and the policy asked for it, gRFC
// A17 health checking with its thresholds. Only the I/O is simulated: a
// dial ends after the backend's connectDelay (refused while the backend is
// stopped or refusing), a check answers after it (failing while the backend
// is stopped, refusing or unhealthy); a connection backing off is probed at
// the health-check interval, and a passing probe ends its backoff. The state the policy sees reaches its
// listener as an event, in order, never re-entrantly.
type subConn struct {
	c         *client
	b         *backend
	listener  func(lb.SubConnState)
	m         *connstate.Machine
	health    *connstate.Health // nil: not health-checked
	connState lb.ConnectivityState
	connErr   error
	state     lb.ConnectivityState // the state the policy sees
	idx       int                  // index in b.conns
}

var _ lb.SubConn = (*subConn)(nil)

// scOwner is a subConn as the I/O side of its machine and health checks.
type scOwner subConn

// SetState takes the connection's new state, and the policy hears the
// state it sees. The machine then runs the checks the state calls for
// (A17's while READY, probes while backing off).
func (o *scOwner) SetState(st lb.ConnectivityState, err error) {
	sc := (*subConn)(o)
	sc.connState, sc.connErr = st, err
	sc.publish()
}

// Dial ends attempt id after the backend's connectDelay, or fails it at
// the attempt's timeout if that comes first.
func (o *scOwner) Dial(id uint64, timeout time.Duration) {
	sc := (*subConn)(o)
	e := &sc.c.run.e
	sc.b.dials++
	if d := sc.b.spec.connectDelay; d > timeout {
		e.at(e.now+timeout, evFunc, 0, func() {
			sc.m.Failed(id, fmt.Errorf("%s: %w after %v", sc.b.spec.name, errConnectTimeout, timeout))
		})
		return
	}
	e.at(e.now+sc.b.spec.connectDelay, evConnect, id, sc)
}

// StartCheck answers check id after the backend's connectDelay.
func (o *scOwner) StartCheck(id uint64) {
	sc := (*subConn)(o)
	e := &sc.c.run.e
	e.at(e.now+sc.b.spec.connectDelay, evFunc, 0, func() {
		var err error
		if sc.b.unhealthy(e.now) {
			err = fmt.Errorf("%s: %w", sc.b.spec.name, ErrUnhealthy)
		}
		sc.health.Result(id, err)
	})
}

// CancelCheck does nothing: a simulated check costs nothing once stale.
func (o *scOwner) CancelCheck() {}

// Checked does nothing: the report counts requests, not checks.
func (o *scOwner) Checked(error) {}

// SetVerdict tells the policy the state it now sees.
func (o *scOwner) SetVerdict(connstate.Verdict, error) { (*subConn)(o).publish() }

// publish queues the listener's call with the state the policy sees, when
// it changed (a TRANSIENT_FAILURE is told again, with its new error).
func (sc *subConn) publish() {
	st, err := sc.connState, sc.connErr
	if sc.health != nil {
		v, verr := sc.health.Verdict()
		if st = connstate.View(st, v); st == lb.TransientFailure && sc.connState == lb.Ready {
			err = verr
		}
	}
	if st == sc.state && st != lb.TransientFailure {
		return
	}
	sc.setState(st, err)
}

// setState moves the SubConn to st and queues the listener's call.
func (sc *subConn) setState(st lb.ConnectivityState, err error) {
	sc.state = st
	s := lb.SubConnState{ConnectivityState: st, ConnectionError: err}
	l := sc.listener
	sc.c.run.e.at(sc.c.run.e.now, evFunc, 0, func() { l(s) })
}

// Connect starts a connection attempt when IDLE.
func (sc *subConn) Connect() {
	if sc.state != lb.Shutdown {
		sc.m.Connect()
	}
}

// connected ends attempt id: READY, unless the backend is stopped or
// refusing now.
func (sc *subConn) connected(id uint64) {
	if sc.b.refusing(sc.c.run.e.now) {
		sc.m.Failed(id, fmt.Errorf("%s: %w", sc.b.spec.name, ErrRefused))
		return
	}
	sc.m.Connected(id)
}

// lose breaks a READY connection: the backend stopped.
func (sc *subConn) lose() { sc.m.Lost(sc.m.Attempt()) }

// Shutdown closes the SubConn for good.
func (sc *subConn) Shutdown() {
	if sc.state == lb.Shutdown {
		return
	}
	sc.m.Close() // stops the health checks too
	sc.setState(lb.Shutdown, nil)
	conns := sc.b.conns
	last := len(conns) - 1
	conns[sc.idx] = conns[last]
	conns[sc.idx].idx = sc.idx
	conns[last] = nil
	sc.b.conns = conns[:last]
}

// ErrUnhealthy is a health check's error while its backend is stopped,
// refusing or under an unhealthy fault.
var ErrUnhealthy = errors.New("sim: health check failed")

var errConnectTimeout = errors.New("sim: connect timeout")

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
	sc := &subConn{c: c, b: b, listener: opts.StateListener, state: lb.Idle, connState: lb.Idle, idx: len(b.conns)}
	sched := scheduler{&c.run.e}
	sc.m = connstate.New(connstate.Config{Scheduler: sched, Backoff: c.spec.backoff,
		MinConnectTimeout: c.spec.minConnectTimeout, Rand: c.connRand}, (*scOwner)(sc))
	if opts.HealthCheck && c.spec.health.Interval > 0 {
		sc.health = connstate.NewHealth(sched, c.connRand, (*scOwner)(sc))
		sc.m.SetHealth(sc.health, &c.spec.health)
	}
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
