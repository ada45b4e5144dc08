package weightedtarget

import (
	"fmt"
	"log/slog"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
	"github.com/lbkit/lbkit/lb/edf"
	"github.com/lbkit/lbkit/lb/resolver"
)

// targetData is what the policy keeps per target, beside what the child
// manager keeps (the child's balancer and last published state).
type targetData struct {
	// weight is the target's weight in the latest config.
	weight uint32
	// slot is the target's index in the pickers of a weightedPicker and
	// its item in the EDF scheduler: stable for the target's lifetime, so
	// the scheduler's carry-over (edf.NewFrom) recognizes it across
	// pickers. Freed slots are reused by later targets.
	slot int
	// reported and picker are what the child last published.
	reported lb.ConnectivityState
	picker   lb.Picker
	// aggState is the state the target counts as in the aggregate: the
	// reported state, except that TRANSIENT_FAILURE sticks until READY.
	aggState lb.ConnectivityState
	// gen counts the child's reports, so the policy can tell whether a
	// picker it published is still current.
	gen uint64
	// failErr is the error of the child's last TRANSIENT_FAILURE picker
	// (see failureOf), kept while the failure is sticky; failSeq orders
	// failures across targets (the latest has the largest).
	failErr error
	failSeq uint64
	// exitIdlePending is set while an ExitIdle for an IDLE report is
	// scheduled.
	exitIdlePending bool
}

type child = childmanager.Child[targetData]

// wtBalancer is the weighted_target_experimental policy.
//
// Every method, child hook and scheduled callback runs inside the tree's
// serialized calls, so nothing is locked. Children may publish
// re-entrantly, from inside the calls the policy makes into them; the
// updating flag keeps such reports from publishing in the middle of a
// parent update (or a ResolverError or ExitIdle sweep), which publishes once
// at its end.
type wtBalancer struct {
	cc     lb.ClientConn
	opts   lb.BuildOptions
	logger *slog.Logger

	children *childmanager.Manager[targetData]

	// config is the latest config; nil before the first update.
	config *Config
	// resolverState is the latest update's resolver state, whose
	// Degraded reason explains a config without targets.
	resolverState resolver.State

	// updating is set while a parent call reaches the children.
	updating bool

	// slots gives each target its slot.
	slots childmanager.Slots
	// failSeq counts children's TRANSIENT_FAILURE reports.
	failSeq uint64

	// sched is the scheduler of the latest READY picker, the base of the
	// next one's carry-over; nil until the first.
	sched *edf.Scheduler[int]
	// pub sends the policy's state, skipping one made of what was last
	// sent.
	pub *childmanager.Publisher[pubKey]
	// resolverErrs counts resolver errors published as the policy's own
	// state.
	resolverErrs uint64
}

// Build returns a new weighted_target balancer reporting to cc; its
// children share opts.
func (policy) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &wtBalancer{
		cc:     cc,
		opts:   opts,
		logger: opts.PolicyLogger(Name),
	}
	b.pub = childmanager.NewPublisher(cc, pubKey.equal, b.refresh)
	b.children = childmanager.New(cc, opts, childmanager.Hooks[targetData]{
		StateChanged: b.childStateChanged,
		Removed:      b.childRemoved,
	})
	return b
}

// UpdateClientConnState applies a config and addresses: targets the config
// no longer names are removed at once (their SubConns shut down), every
// other target is created if new and sent its config and its addresses,
// and then the policy publishes its aggregate state once, even if nothing
// changed. The children's errors are returned joined, each naming its
// target, so that [lb.ErrBadResolverState] from a child reaches the
// channel.
func (b *wtBalancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*Config)
	if !ok || cfg == nil {
		return fmt.Errorf("weightedtarget: got config %T, want a non-nil *weightedtarget.Config", s.BalancerConfig)
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	groups := childmanager.GroupAddresses(b.logger, "weightedtarget", s.ResolverState.Addresses, func(name string) bool {
		_, ok := cfg.Targets[name]
		return ok
	})
	b.config, b.resolverState = cfg, s.ResolverState

	b.updating = true
	err := childmanager.Sync(b.children, b.logger, "weightedtarget", "target", cfg.Targets, b.addChild,
		func(c *child, t Target) error {
			if c.Data.weight != t.Weight {
				b.logger.Debug("weightedtarget: target weight", "child_name", c.Name(), "weight", t.Weight)
				c.Data.weight = t.Weight
			}
			if p := c.Policy(); p != "" && p != t.ChildPolicy.Name {
				// The child manager replaces the balancer: the new one has
				// not failed, so the failure no longer sticks.
				c.Data.aggState, c.Data.failErr = lb.Connecting, nil
			}
			return c.Update(t.ChildPolicy, childmanager.ChildState(groups, c.Name(), s.ResolverState))
		})
	b.updating = false

	b.publish(true)
	return err
}

// addChild creates the target called name, in the child manager's initial
// state (CONNECTING), with a free slot.
func (b *wtBalancer) addChild(name string) *child {
	c := b.children.Add(name)
	slot := b.slots.Take()
	initial := c.State().ConnectivityState
	c.Data = targetData{slot: slot, reported: initial, aggState: initial}
	b.logger.Debug("weightedtarget: adding target", "child_name", name)
	return c
}

// ResolverError passes err to every target, then publishes if the
// aggregate changed. With no target, the policy reports TRANSIENT_FAILURE
// with err, each time (each error may say something new).
func (b *wtBalancer) ResolverError(err error) {
	if b.children.Len() == 0 {
		b.resolverErrs++
		b.pub.Publish(pubKey{state: lb.TransientFailure, own: ownResolverError, seq: b.resolverErrs}, true, func() lb.State {
			return lb.State{
				ConnectivityState: lb.TransientFailure,
				Picker:            lb.NewErrPicker(lb.TransientFailureError(fmt.Errorf("weightedtarget: resolver error: %w", err))),
			}
		})
		return
	}
	b.updating = true
	b.children.ResolverError(err)
	b.updating = false
	b.publish(false)
}

// ExitIdle passes the request to every target, then publishes once if the
// aggregate changed. Unlike priority, which uses one child at a time,
// weighted_target spreads requests over all of its targets, so every IDLE
// target must connect for the weights to hold; children that are not IDLE
// ignore the call.
func (b *wtBalancer) ExitIdle() {
	b.updating = true
	b.children.ExitIdle()
	b.updating = false
	b.publish(false)
}

// Close removes every target; their SubConns shut down.
func (b *wtBalancer) Close() { b.children.Close() }

// childStateChanged is the child manager's StateChanged hook: it records the
// child's state, applies sticky TRANSIENT_FAILURE, asks a child that just
// became IDLE to leave IDLE, and publishes unless a parent call is in
// progress (which publishes when it is done).
func (b *wtBalancer) childStateChanged(c *child) {
	s := c.State()
	d := &c.Data
	if childmanager.SameState(s, lb.State{ConnectivityState: d.reported, Picker: d.picker}) {
		return // the same report again: nothing to apply, nothing to publish
	}
	prev := d.reported
	d.reported, d.picker = s.ConnectivityState, s.Picker
	d.gen++
	switch s.ConnectivityState {
	case lb.Ready:
		d.aggState, d.failErr = lb.Ready, nil
	case lb.TransientFailure:
		d.aggState = lb.TransientFailure
		d.failErr = failureOf(s.Picker)
		b.failSeq++
		d.failSeq = b.failSeq
	default:
		if d.aggState != lb.TransientFailure {
			d.aggState = s.ConnectivityState
		}
	}
	b.logger.Debug("weightedtarget: target state", "child_name", c.Name(),
		"state", s.ConnectivityState, "counts_as", d.aggState)
	if s.ConnectivityState == lb.Idle && prev != lb.Idle {
		b.scheduleExitIdle(c)
	}
	if !b.updating {
		b.publish(false)
	}
}

// scheduleExitIdle asks c to leave IDLE, from a callback scheduled on c's
// scope (dropped if c is removed first) rather than inline: c is in the
// middle of publishing, and its balancer must not be re-entered. A target that stays IDLE would get no requests, since only
// READY targets are picked, and its share would be lost (C-core does the
// same, inline).
func (b *wtBalancer) scheduleExitIdle(c *child) {
	if c.Data.exitIdlePending {
		return
	}
	c.Data.exitIdlePending = true
	c.Scheduler().Schedule(func() {
		c.Data.exitIdlePending = false
		if c.State().ConnectivityState == lb.Idle {
			c.ExitIdle()
		}
	})
}

// childRemoved is the child manager's Removed hook: the target's slot is
// freed for a later target.
func (b *wtBalancer) childRemoved(c *child) {
	b.slots.Free(c.Data.slot)
}

// Describe returns the weighted_target node: each target with its weight,
// in name order.
func (b *wtBalancer) Describe() lb.Node {
	n := lb.Node{Policy: Name}
	for _, c := range b.children.Children() {
		cn := c.Describe()
		cn.Weight = c.Data.weight
		n.Children = append(n.Children, cn)
	}
	return n
}
