package childmanager

import (
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Child is one named child of a [Manager]: a slot that runs one policy at a
// time, built on its first [Child.Update].
//
// Like its Manager, a Child is used only inside the tree's serialized
// calls. Once removed (see [Child.Removed]) it stays removed: Update fails,
// the methods that act on the balancer do nothing, State keeps returning the
// last state, and a new child of the same name is a new Child.
type Child[T any] struct {
	// Data is the owner's per-child state; the zero T after Add. The
	// manager never reads or writes it.
	Data T

	m    *Manager[T]
	name string

	// scope is the child's: the owner's work for this child (see
	// Scheduler) and the deactivation timer run on it, and it closes
	// when the child is removed.
	scope *lb.Scope
	// policy names the policy balancer runs; both are empty until the
	// first Update, and again after the balancer is closed.
	policy   string
	balancer lb.Balancer
	// bscope is balancer's scope, made from scope: its Scheduler and,
	// through bscope.ClientConn, its ClientConn. Replacing or closing the
	// balancer closes it, so nothing of the old balancer runs or reaches
	// the owner afterwards.
	bscope *lb.Scope

	state            lb.State
	ignoreResolveNow bool
	// deactivation is the pending deactivation timer; nil while active.
	deactivation lb.Timer
	// retainUntil is when the deactivation timer fires, for Describe.
	retainUntil time.Time
	removed     bool
}

// Name returns the child's name.
func (c *Child[T]) Name() string { return c.name }

// Scheduler returns the child's scope, for the owner's work about this
// child (a failover timer, a hop that wakes the child): whatever is
// scheduled on it is dropped once the child is removed, so its callbacks
// need not ask whether the child still exists. The child's balancer runs
// on a scope made from it that also closes when the balancer is replaced.
func (c *Child[T]) Scheduler() lb.Scheduler { return c.scope }

// State returns the child's last published state and picker, or the initial
// state (CONNECTING, queueing) if it has published none since it was added
// or since its policy changed.
func (c *Child[T]) State() lb.State { return c.state }

// Policy returns the name of the policy the child runs, or "" before its
// first Update and after removal.
func (c *Child[T]) Policy() string { return c.policy }

// Update gives the child a new config and addresses. On the first call it
// builds p's policy; if p names another policy than the one running, the
// running balancer is closed (shutting down its SubConns), the child's state
// is reset to the initial state (StateChanged is called) and p's policy is
// built. The balancer then receives rs and p.Config; its error is returned.
//
// The child may publish states inline, re-entrantly, during Update; each
// calls StateChanged before Update returns.
func (c *Child[T]) Update(p *lb.ParsedPolicy, rs resolver.State) error {
	if c.removed {
		return fmt.Errorf("childmanager: child %q was removed", c.name)
	}
	if p == nil || p.Builder == nil {
		return fmt.Errorf("childmanager: child %q: no policy to run", c.name)
	}
	if c.balancer != nil && c.policy != p.Name {
		c.m.logger.Info("childmanager: child changes policy", "child_name", c.name, "from", c.policy, "to", p.Name)
		c.closeBalancer()
		c.setState(initialState())
		if c.removed { // the owner removed the child from its hook
			return fmt.Errorf("childmanager: child %q was removed", c.name)
		}
	}
	if c.balancer == nil {
		c.m.logger.Debug("childmanager: building child", "child_name", c.name, "child_policy", p.Name)
		bscope := lb.NewScope(c.scope)
		c.bscope, c.policy = bscope, p.Name
		b := p.Builder.Build(bscope.ClientConn(childCC[T]{c: c}), c.buildOptions(bscope))
		if bscope.Closed() { // removed or replaced from a hook, inline
			b.Close()
			return fmt.Errorf("childmanager: child %q was removed while it was built", c.name)
		}
		c.balancer = b
	}
	return c.balancer.UpdateClientConnState(lb.ClientConnState{ResolverState: rs, BalancerConfig: p.Config})
}

// Describe returns the child's node: its balancer's own description (see
// [lb.Describe]) with the child's name, its last state, and, while it is
// deactivated, when it will be removed.
func (c *Child[T]) Describe() lb.Node {
	n := lb.Describe(c.balancer, c.policy)
	n.Name = c.name
	n.SetState(c.state)
	if c.deactivation != nil {
		until := c.retainUntil
		n.Deactivated, n.RetainUntil = true, &until
	}
	return n
}

// buildOptions returns the manager's options with the child's ChildPath
// and the balancer's scope as its Scheduler.
func (c *Child[T]) buildOptions(scope *lb.Scope) lb.BuildOptions {
	opts := c.m.opts
	opts.Scheduler = scope
	if opts.ChildPath == "" {
		opts.ChildPath = c.name
	} else {
		opts.ChildPath += "/" + c.name
	}
	return opts
}

// ResolverError passes err to the child's balancer, if built.
func (c *Child[T]) ResolverError(err error) {
	if c.balancer != nil {
		c.balancer.ResolverError(err)
	}
}

// ExitIdle asks the child's balancer, if built, to leave IDLE.
func (c *Child[T]) ExitIdle() {
	if c.balancer != nil {
		c.balancer.ExitIdle()
	}
}

// SetIgnoreResolveNow sets whether the child's ResolveNow calls are dropped
// (true) or passed to the parent (false, the initial setting). It takes
// effect at once.
func (c *Child[T]) SetIgnoreResolveNow(ignore bool) { c.ignoreResolveNow = ignore }

// IgnoresResolveNow reports the setting of [Child.SetIgnoreResolveNow].
func (c *Child[T]) IgnoresResolveNow() bool { return c.ignoreResolveNow }

// Active reports whether the child exists and is not deactivated.
func (c *Child[T]) Active() bool { return !c.removed && c.deactivation == nil }

// Removed reports whether the child has left its manager.
func (c *Child[T]) Removed() bool { return c.removed }

// Deactivate starts the child's deactivation timer: unless
// [Child.Reactivate] is called first, the child is removed when it fires.
// The child keeps running meanwhile; its states still reach StateChanged.
// Deactivating a child that is already deactivated does nothing, in
// particular it does not restart the timer.
func (c *Child[T]) Deactivate() {
	if c.removed || c.deactivation != nil {
		return
	}
	c.m.logger.Debug("childmanager: child deactivated", "child_name", c.name, "removal_in", c.m.delay)
	c.retainUntil = c.m.opts.Clock.Now().Add(c.m.delay) // for Describe only
	c.deactivation = c.scope.AfterFunc(c.m.delay, func() {
		c.deactivation = nil
		c.m.logger.Debug("childmanager: deactivation timer fired", "child_name", c.name)
		c.Remove()
	})
}

// Reactivate stops the child's deactivation timer, if any. The child keeps
// its balancer, SubConns and last state.
func (c *Child[T]) Reactivate() {
	if c.deactivation == nil {
		return
	}
	c.deactivation.Stop()
	c.deactivation = nil
	c.m.logger.Debug("childmanager: child reactivated", "child_name", c.name)
}

// Remove removes the child now: it closes the child's scope (see
// [Child.Scheduler]; the deactivation timer ends with it), closes its
// balancer (whose SubConns shut down), forgets it, and calls Hooks.Removed.
// Removing a removed child does nothing.
func (c *Child[T]) Remove() {
	if c.removed {
		return
	}
	c.removed = true
	c.scope.Close()
	c.deactivation = nil
	if c.m.children[c.name] == c {
		delete(c.m.children, c.name)
	}
	c.m.logger.Debug("childmanager: child removed", "child_name", c.name)
	c.closeBalancer()
	if c.m.hooks.Removed != nil {
		c.m.hooks.Removed(c)
	}
}

// closeBalancer closes the balancer's scope, then the balancer: whatever
// the balancer does in Close other than shutting its SubConns down and
// closing its own children (publishing, scheduling) is dropped.
func (c *Child[T]) closeBalancer() {
	if c.bscope != nil {
		c.bscope.Close()
		c.bscope = nil
	}
	b := c.balancer
	c.balancer, c.policy = nil, ""
	if b != nil {
		b.Close()
	}
}

// setState records s and tells the owner.
func (c *Child[T]) setState(s lb.State) {
	c.state = s
	c.m.hooks.StateChanged(c)
}

// childCC is the ClientConn of one built balancer of a child, which the
// balancer reaches through its scope's ClientConn (see [lb.Scope]): once
// the balancer is closed or replaced, none of its calls gets here.
type childCC[T any] struct{ c *Child[T] }

// NewSubConn passes the call to the parent's ClientConn unchanged, so the
// listener in opts hears the SubConn's states directly.
func (w childCC[T]) NewSubConn(addrs []resolver.Address, opts lb.NewSubConnOptions) (lb.SubConn, error) {
	return w.c.m.cc.NewSubConn(addrs, opts)
}

// UpdateState records s as the child's state and calls StateChanged. A nil
// picker, which the lb contract forbids, is replaced by one failing with a
// transient failure, and logged.
func (w childCC[T]) UpdateState(s lb.State) {
	if s.Picker == nil {
		w.c.m.logger.Error("childmanager: child published a nil picker", "child_name", w.c.name, "state", s.ConnectivityState)
		s.Picker = lb.NewErrPicker(lb.TransientFailureError(errNilPicker))
	}
	w.c.setState(s)
}

// ResolveNow passes the request to the parent unless the child ignores
// re-resolution requests.
func (w childCC[T]) ResolveNow() {
	if !w.c.ignoreResolveNow {
		w.c.m.cc.ResolveNow()
	}
}

// Target returns the parent's target.
func (w childCC[T]) Target() string { return w.c.m.cc.Target() }
