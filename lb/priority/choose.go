package priority

import (
	"errors"

	"github.com/lbkit/lbkit/lb"
)

// ErrEmptyPriorities is wrapped by the error of the picker published when
// the config lists no priority; its message is gRFC A56's. Match it with
// errors.Is.
var ErrEmptyPriorities = errors.New("priority policy has empty priority list")

// choosePriority is gRFC A56's ChoosePriority: it walks the priorities from
// the highest, creating children as it reaches them, and uses the first
// child that is READY or IDLE or whose failover timer is pending; failing
// that, the first CONNECTING child; failing that, the last child.
//
// force publishes the chosen child's picker even if it was the last thing
// published, as needed after a parent update; otherwise nothing is
// published when neither the chosen child nor its state changed, so running
// the choice again with no change reports nothing new.
//
// It returns the errors of the children it created, each naming its child.
func (b *priorityBalancer) choosePriority(force bool) error {
	b.choosing = true
	defer func() { b.choosing = false }()

	priorities := b.config.Priorities
	if len(priorities) == 0 {
		b.current = nil
		b.publish(published{own: ownEmptyPriorities}, lb.State{
			ConnectivityState: lb.TransientFailure,
			Picker:            lb.NewErrPicker(lb.TransientFailureError(b.resolverState.Explain(ErrEmptyPriorities))),
		}, force)
		return nil
	}
	var errs []error
	for p, name := range priorities {
		c := b.children.Get(name)
		if c == nil {
			var err error
			c, err = b.createChild(name)
			errs = append(errs, err)
		} else {
			c.Reactivate()
		}
		switch {
		case c.Data.state == lb.Ready || c.Data.state == lb.Idle:
			b.setCurrentPriority(p, true, force)
			return errors.Join(errs...)
		case c.Data.failover != nil:
			b.setCurrentPriority(p, false, force)
			return errors.Join(errs...)
		}
	}
	// No child is READY or IDLE or has a pending failover timer: use the
	// first CONNECTING one. Every child exists now.
	for p, name := range priorities {
		if b.children.Get(name).Data.state == lb.Connecting {
			b.setCurrentPriority(p, false, force)
			return errors.Join(errs...)
		}
	}
	b.setCurrentPriority(len(priorities)-1, false, force)
	return errors.Join(errs...)
}

// setCurrentPriority is gRFC A56's SetCurrentPriority: it makes the child at
// priority p the current one, deactivates the existing children below it
// if asked, and publishes the child's state and picker as they are (no
// wrapper).
func (b *priorityBalancer) setCurrentPriority(p int, deactivateLower, force bool) {
	priorities := b.config.Priorities
	if deactivateLower {
		for _, name := range priorities[p+1:] {
			if c := b.children.Get(name); c != nil {
				c.Deactivate()
			}
		}
	}
	c := b.children.Get(priorities[p])
	if b.current != c {
		from := ""
		if b.current != nil {
			from = b.current.Name()
		}
		b.opts.OnEvent(lb.Event{Kind: lb.EventPriorityChange, Path: b.opts.ChildPath, From: from, To: c.Name()})
		c.Data.switches.Add(1)
		b.logger.Info("priority: switching child", "child_name", c.Name(), "priority", p, "state", c.Data.state)
	}
	b.current = c
	b.publish(published{child: c, gen: c.Data.gen}, lb.State{ConnectivityState: c.Data.state, Picker: c.Data.picker}, force)
}

// publish sends s to the parent unless what it describes, what, is what was
// last sent; then, if force, the last state is sent again.
func (b *priorityBalancer) publish(what published, s lb.State, force bool) {
	b.pub.Publish(what, force, func() lb.State { return s })
}

// createChild is gRFC A56's CreateChild followed by the child's first
// update: the failover timer starts before the child is built, so a child
// that becomes READY inline, during its first update, stops it at once.
func (b *priorityBalancer) createChild(name string) (*child, error) {
	c := b.children.Add(name)
	initial := c.State()
	c.Data = childData{
		state: initial.ConnectivityState, picker: initial.Picker,
		switches:      b.opts.Metrics.Counter(MetricSwitches, b.cc.Target(), name),
		failoverFired: b.opts.Metrics.Counter(MetricFailoverTimerFires, b.cc.Target(), name),
	}
	b.startFailoverTimer(c)
	childCfg := b.config.Children[name]
	c.SetIgnoreResolveNow(childCfg.IgnoreReresolutionRequests)
	b.logger.Debug("priority: creating child", "child_name", name, "child_policy", childCfg.Policy.Name)
	return c, b.updateChild(c, childCfg)
}

// startFailoverTimer starts c's failover timer, on c's scope: it ends when
// c is removed. When it fires, c is treated as if it reported
// TRANSIENT_FAILURE: its state becomes TRANSIENT_FAILURE (its picker stays
// its last one, as it published no other) and the choice runs.
func (b *priorityBalancer) startFailoverTimer(c *child) {
	c.Data.failoverAt = b.opts.Clock.Now().Add(b.bopts.failoverTimeout) // for Describe only
	c.Data.failover = c.Scheduler().AfterFunc(b.bopts.failoverTimeout, func() {
		c.Data.failover = nil
		c.Data.failoverFired.Add(1)
		b.logger.Info("priority: failover timer fired", "child_name", c.Name(), "timeout", b.bopts.failoverTimeout)
		c.Data.state = lb.TransientFailure
		c.Data.seenReadyOrIdleSinceTF = false
		c.Data.gen++
		b.maybeChoosePriority()
	})
}

// stopFailoverTimer stops c's failover timer if it is pending.
func (b *priorityBalancer) stopFailoverTimer(c *child) {
	if c.Data.failover != nil {
		c.Data.failover.Stop()
		c.Data.failover = nil
	}
}
