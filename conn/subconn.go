package conn

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/connstate"
	"github.com/lbkit/lbkit/lb/resolver"
)

// SubConn is a balancer's handle on a connection, returned by
// lb.ClientConn.NewSubConn and by [Channel.Pick]. Handles of different
// balancers for the same address (during a balancer switch) share one
// connection.
//
// Connect and Shutdown are called by the balancer from inside the channel's
// serialized calls. Address and ReportError are safe from any goroutine.
type SubConn struct {
	c        *Channel
	w        *balancerWrapper
	ac       *addrConn
	listener func(lb.SubConnState)
	// wantsHealth is set when the policy asked for health checks
	// (lb.NewSubConnOptions.HealthCheck). Read-only.
	wantsHealth bool

	// Owned by the serializer.
	connected bool // Connect was called: the handle follows ac's state
	shutdown  bool
	state     lb.ConnectivityState
	since     time.Time // when state began, for the snapshot
}

// connKey identifies a connection: the balancing attributes of an address
// do not change where it connects.
type connKey struct {
	addr, serverName string
	multi            *addrConn // set for multi-address SubConns, never shared
}

var errConnectTimeout = errors.New("connect timeout")

// addrConn is one connection (with its backoff) shared by SubConn handles.
type addrConn struct {
	c     *Channel
	key   connKey
	addrs []resolver.Address

	readyState atomic.Int32                     // lb.ConnectivityState, for Pick
	addr       atomic.Pointer[resolver.Address] // the connected address
	gated      atomic.Bool                      // health decides readiness for handles that asked
	healthy    atomic.Bool                      // the last health verdict passed

	// Owned by the serializer.
	m       *connstate.Machine   // connecting, backoff: ac is its Owner
	state   lb.ConnectivityState // the state m last entered, or SHUTDOWN
	err     error
	handles map[*SubConn]struct{}
	cancel  context.CancelFunc
	conn    *ownedConn
	closed  bool

	// For the snapshot (observe.go): when state began, the last failed
	// dial, the last health check, and the request counters.
	since       time.Time
	lastConnErr *lb.TimedError
	lastCheck   *lb.HealthCheckResult
	stats       endpointStats

	// Health checking (health.go), owned by the serializer.
	wantHealth  int // handles that asked for health checks
	verdict     healthVerdict
	verdictErr  error
	health      *connstate.Health // checks, thresholds, timers: ac is its HealthOwner
	checks      int               // check results applied
	checkCancel context.CancelFunc
}

func (c *Channel) newSubConn(w *balancerWrapper, addrs []resolver.Address, opts lb.NewSubConnOptions) *SubConn {
	key := connKey{addr: addrs[0].Addr, serverName: addrs[0].ServerName}
	ac := c.addrConns[key]
	if len(addrs) > 1 || ac == nil {
		ac = &addrConn{c: c, addrs: append([]resolver.Address(nil), addrs...), handles: make(map[*SubConn]struct{})}
		ac.m = connstate.New(connstate.Config{Scheduler: c.ser, Backoff: c.cfg.backoff,
			MinConnectTimeout: c.cfg.minConnectTimeout, Rand: c.rand}, (*acOwner)(ac))
		ac.health = connstate.NewHealth(c.ser, c.rand, (*acHealth)(ac))
		if len(addrs) > 1 {
			key.multi = ac
		}
		ac.key = key
		ac.addr.Store(&ac.addrs[0])
		ac.since = c.clock.Now()
		ac.stats.init(c, key.addr)
		c.addrConns[key] = ac
	}
	sc := &SubConn{c: c, w: w, ac: ac, listener: opts.StateListener, wantsHealth: opts.HealthCheck}
	ac.handles[sc] = struct{}{}
	if sc.wantsHealth {
		ac.wantHealth++
		ac.updateHealthGate(false)
	}
	return sc
}

// Connect starts connecting if the connection is IDLE; if it is already
// connecting or connected (for another handle), the handle reports that
// state.
func (sc *SubConn) Connect() {
	if sc.shutdown {
		return
	}
	sc.connected = true
	if sc.ac.state == lb.Idle {
		sc.ac.m.Connect()
		return
	}
	sc.setState(sc.ac.viewFor(sc))
}

// Shutdown releases the handle; the connection closes when no handle uses
// it. The listener receives SHUTDOWN last.
func (sc *SubConn) Shutdown() {
	if sc.shutdown {
		return
	}
	sc.shutdown = true
	delete(sc.w.subs, sc)
	ac := sc.ac
	delete(ac.handles, sc)
	sc.deliver(lb.SubConnState{ConnectivityState: lb.Shutdown})
	if len(ac.handles) == 0 {
		ac.close()
		return
	}
	if sc.wantsHealth {
		ac.wantHealth--
		ac.updateHealthGate(false)
	}
}

// Address returns the address the SubConn is connected to (for a SubConn
// of several addresses, the one that answered), or its first address.
func (sc *SubConn) Address() resolver.Address { return *sc.ac.addr.Load() }

// Closed reports whether the channel has closed the connection this
// SubConn uses for good: no balancer uses its address any more, or the
// channel was closed. A pick never returns it again; an adapter that keeps
// state per backend (such as a connection pool) can drop it. Safe from any
// goroutine.
func (sc *SubConn) Closed() bool {
	return lb.ConnectivityState(sc.ac.readyState.Load()) == lb.Shutdown
}

// ReportError tells the channel a request on this connection failed to
// reach the server (for example the dial was refused): the channel treats
// the connection as lost, so the policy reconnects or moves on. Safe from
// any goroutine.
func (sc *SubConn) ReportError(err error) {
	ac := sc.ac
	// Picks stop returning the connection at once (Pick checks readiness),
	// not only once the serializer gets to it: a policy that keeps
	// choosing it (ring_hash, for a request's hash) would otherwise hand
	// it back to every retry until then. The serializer sets the state it
	// decides on below.
	ac.readyState.CompareAndSwap(int32(lb.Ready), int32(lb.TransientFailure))
	sc.c.ser.Schedule(func() {
		if ac.closed || ac.state != lb.Ready {
			return
		}
		sc.c.logger.Info("request failed on a READY connection; reconnecting", "addr", ac.addr.Load().Addr, "error", err)
		ac.onLost(ac.m.Attempt())
	})
}

// String returns "SubConn(addr)".
func (sc *SubConn) String() string { return fmt.Sprintf("SubConn(%s)", sc.ac.addrs[0].Addr) }

// ready reports whether the connection is READY, and healthy if the
// handle is health-checked. Safe from any goroutine.
func (sc *SubConn) ready() bool {
	ac := sc.ac
	return lb.ConnectivityState(ac.readyState.Load()) == lb.Ready &&
		(!sc.wantsHealth || !ac.gated.Load() || ac.healthy.Load())
}

// setState delivers a state change to a connected handle's listener.
func (sc *SubConn) setState(s lb.ConnectivityState, err error) {
	if sc.shutdown || !sc.connected || (sc.state == s && s != lb.TransientFailure) {
		return
	}
	if sc.state != s || sc.since.IsZero() {
		sc.since = sc.c.clock.Now()
	}
	sc.state = s
	sc.deliver(lb.SubConnState{ConnectivityState: s, ConnectionError: err})
}

// deliver calls the listener after the current serialized call, so a
// balancer never hears of a state change re-entrantly.
func (sc *SubConn) deliver(s lb.SubConnState) {
	sc.c.ser.Schedule(func() {
		if sc.shutdown && s.ConnectivityState != lb.Shutdown {
			return
		}
		sc.listener(s)
	})
}

// setState records the connection's own state, starts or stops its health
// checks, and tells every handle the state it sees.
func (ac *addrConn) setState(s lb.ConnectivityState, err error) {
	if s != ac.state {
		ac.c.metrics.stateChanged(s)
		ac.since = ac.c.clock.Now()
	}
	ac.state, ac.err = s, err
	ac.readyState.Store(int32(s))
	ac.forgetVerdict() // the machine restarts its checks after this call
	ac.notify()
}

// acOwner is an addrConn as the I/O side of its connstate.Machine.
type acOwner addrConn

// SetState records the state the machine entered (see addrConn.setState).
func (o *acOwner) SetState(s lb.ConnectivityState, err error) { (*addrConn)(o).setState(s, err) }

// Dial dials the addresses in order on a new goroutine; the result comes
// back to the machine through onConnected or onFailed, serialized.
func (o *acOwner) Dial(attempt uint64, timeout time.Duration) {
	ac := (*addrConn)(o)
	c := ac.c
	ctx, cancel := context.WithCancel(c.ctx)
	ac.cancel = cancel
	addrs := ac.addrs
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var lastErr error
		for _, a := range addrs {
			// The timeout runs on the channel's clock. It cancels the
			// context rather than setting a deadline, because a mock
			// clock's deadline means nothing to the network stack.
			dctx, dcancel := context.WithCancelCause(ctx)
			timer := c.clock.AfterFunc(timeout, func() { dcancel(errConnectTimeout) })
			conn, err := c.cfg.dialer.Dial(dctx, a)
			timer.Stop()
			if cause := context.Cause(dctx); err != nil && errors.Is(cause, errConnectTimeout) {
				err = fmt.Errorf("%w after %v: %w", errConnectTimeout, timeout, err)
			}
			dcancel(nil)
			if err == nil {
				// From here the channel owns conn: if the serializer
				// drops the hand-over below, Close closes it.
				if oc := c.conns.adopt(conn); oc != nil && !c.ser.Schedule(func() { ac.onConnected(attempt, a, oc, ctx) }) {
					c.conns.release(oc)
				}
				return
			}
			if ctx.Err() != nil {
				return // shut down
			}
			lastErr = fmt.Errorf("conn: dial %s: %w", a.Addr, err)
		}
		c.ser.Schedule(func() { ac.onFailed(attempt, lastErr) })
	}()
}

func (ac *addrConn) onConnected(attempt uint64, a resolver.Address, conn *ownedConn, ctx context.Context) {
	c := ac.c
	if ac.closed || attempt != ac.m.Attempt() {
		c.conns.release(conn)
		return
	}
	ac.conn = conn
	ac.addr.Store(&a)
	c.logger.Debug("connected", "addr", a.Addr)
	ac.m.Connected(attempt)
	if conn.Lost() == nil {
		return // nothing to watch: requests and health checks judge it
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case <-conn.Lost():
			c.ser.Schedule(func() { ac.onLost(attempt) })
		case <-ctx.Done():
		}
	}()
}

// onLost handles a lost READY connection: close it and go IDLE.
func (ac *addrConn) onLost(attempt uint64) {
	if ac.closed || attempt != ac.m.Attempt() || ac.conn == nil {
		return
	}
	ac.c.logger.Info("connection lost", "addr", ac.addr.Load().Addr)
	ac.dropConn()
	ac.m.Lost(attempt)
}

// onFailed handles a failed attempt: TRANSIENT_FAILURE for the backoff
// delay, then IDLE (connstate.Machine.Failed).
func (ac *addrConn) onFailed(attempt uint64, err error) {
	c := ac.c
	if ac.closed || attempt != ac.m.Attempt() || ac.m.State() != lb.Connecting {
		return
	}
	if err == nil {
		err = errors.New("conn: no address to dial")
	}
	ac.lastConnErr = lb.NewTimedError(err, c.clock.Now())
	if delay, ok := ac.m.Failed(attempt, err); ok {
		c.logger.Debug("connection attempt failed", "addr", ac.addrs[0].Addr, "error", err, "backoff", delay)
	}
}

// dropConn closes the connection and ends its watcher (the machine makes
// their results stale).
func (ac *addrConn) dropConn() {
	if ac.cancel != nil {
		ac.cancel()
		ac.cancel = nil
	}
	if ac.conn != nil {
		ac.c.conns.release(ac.conn)
		ac.conn = nil
	}
}

// close shuts the connection down for good.
func (ac *addrConn) close() {
	if ac.closed {
		return
	}
	ac.closed = true
	ac.m.Close() // stops the checks too
	ac.forgetVerdict()
	ac.dropConn()
	ac.c.metrics.stateChanged(lb.Shutdown)
	ac.state = lb.Shutdown
	ac.readyState.Store(int32(lb.Shutdown))
	delete(ac.c.addrConns, ac.key)
	for sc := range ac.handles {
		sc.Shutdown()
	}
}
