package conn

import (
	"errors"
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// balancerWrapper is the lb.ClientConn of one top-level balancer. During a
// balancer switch the channel has two: current and pending.
//
// The balancer runs on scope (its Scheduler) and reaches the wrapper
// through scope.ClientConn: once close has closed the scope, none of the
// balancer's calls, SubConn states, hops or timers gets anywhere.
type balancerWrapper struct {
	c       *Channel
	name    string
	b       lb.Balancer
	scope   *lb.Scope
	state   lb.State
	since   time.Time // when state's ConnectivityState began
	subs    map[*SubConn]struct{}
	created int // SubConns created, for logs
}

// NewSubConn creates a SubConn handle; connections to an address already
// connected for another handle are shared.
func (w *balancerWrapper) NewSubConn(addrs []resolver.Address, opts lb.NewSubConnOptions) (lb.SubConn, error) {
	if len(addrs) == 0 {
		return nil, errors.New("conn: NewSubConn: no address")
	}
	if opts.StateListener == nil {
		return nil, errors.New("conn: NewSubConn: StateListener is nil")
	}
	if w.c.health != nil && !opts.HealthCheck {
		w.c.warnUnchecked(w.name)
	}
	sc := w.c.newSubConn(w, addrs, opts)
	w.subs[sc] = struct{}{}
	w.created++
	return sc, nil
}

// UpdateState records the balancer's state and publishes it if this
// balancer's picker is the one in use (see switchTo).
func (w *balancerWrapper) UpdateState(s lb.State) {
	if s.Picker == nil {
		s.Picker = lb.NewErrPicker(lb.TransientFailureError(fmt.Errorf("conn: policy %s published no picker", w.name)))
	}
	if s.ConnectivityState != w.state.ConnectivityState {
		w.since = w.c.clock.Now()
	}
	w.state = s
	w.c.balancerStateChanged(w)
}

// ResolveNow asks the resolver to resolve again.
func (w *balancerWrapper) ResolveNow() { w.c.resolveNow() }

// Target returns the channel's target.
func (w *balancerWrapper) Target() string { return w.c.target }

// close closes the balancer's scope, then the balancer, and shuts down
// every SubConn it left. Calling it again does nothing.
func (w *balancerWrapper) close() {
	if w.scope.Closed() {
		return
	}
	w.scope.Close()
	w.b.Close()
	for sc := range w.subs {
		sc.Shutdown()
	}
}

// latest returns the balancer that receives updates: pending if a switch is
// in progress, else current.
func (c *Channel) latest() *balancerWrapper {
	if c.pending != nil {
		return c.pending
	}
	return c.current
}

// switchTo returns the balancer for p, building it (beside the current one
// during a switch) if the policy changed. Runs serialized.
func (c *Channel) switchTo(p *lb.ParsedPolicy) *balancerWrapper {
	if w := c.latest(); w != nil && w.name == p.Name {
		return w
	}
	w := &balancerWrapper{
		c:     c,
		name:  p.Name,
		scope: lb.NewScope(c.ser),
		state: lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()},
		since: c.clock.Now(),
		subs:  make(map[*SubConn]struct{}),
	}
	opts := lb.BuildOptions{Clock: c.clock, Logger: c.logger, Rand: c.rand, Scheduler: w.scope, Target: c.target, Metrics: c.cfg.metrics,
		OnEvent: c.emit}.WithDefaults()
	cc := w.scope.ClientConn(w)
	from := ""
	if l := c.latest(); l != nil {
		from = l.name
	}
	c.emit(lb.Event{Kind: lb.EventPolicySwitch, From: from, To: p.Name})
	if c.current == nil {
		c.current = w
		w.b = p.Builder.Build(cc, opts)
		return w
	}
	c.logger.Info("switching balancer", "from", c.latest().name, "to", p.Name)
	if c.pending != nil {
		c.pending.close()
	}
	c.pending = w
	w.b = p.Builder.Build(cc, opts)
	if c.pending == w && c.current.state.ConnectivityState != lb.Ready {
		c.swapToPending()
	}
	return w
}

// balancerStateChanged applies L9's rule for a switch: the old picker stays
// in use until the new balancer leaves CONNECTING or the old one leaves
// READY.
func (c *Channel) balancerStateChanged(w *balancerWrapper) {
	switch w {
	case c.pending:
		if w.state.ConnectivityState == lb.Connecting && c.current.state.ConnectivityState == lb.Ready {
			return
		}
		c.swapToPending()
	case c.current:
		if c.pending != nil && w.state.ConnectivityState != lb.Ready {
			c.swapToPending()
			return
		}
		c.publishBalancerState(w.state)
	}
}

// swapToPending closes the current balancer (shutting down connections only
// it used) and makes the pending one current.
func (c *Channel) swapToPending() {
	old := c.current
	c.current, c.pending = c.pending, nil
	old.close()
	c.publishBalancerState(c.current.state)
}

func (c *Channel) publishBalancerState(s lb.State) {
	c.publish(&pickerGen{picker: s.Picker, state: s.ConnectivityState})
	c.setState(s.ConnectivityState)
}
