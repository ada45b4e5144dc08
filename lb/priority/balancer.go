package priority

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
	"github.com/lbkit/lbkit/lb/resolver"
)

// childData is what the policy keeps per child, beside what the child
// manager keeps (gRFC A56, "Child Connectivity State Tracking").
type childData struct {
	// state and picker are the child's most recent state and picker as
	// the choice sees them: what it published, or TRANSIENT_FAILURE (with
	// its last picker) after its failover timer fired.
	state  lb.ConnectivityState
	picker lb.Picker
	// gen counts changes of state or picker, so the policy can tell
	// whether what it last published is still current.
	gen uint64
	// failover is the pending failover timer, nil when none is.
	failover lb.Timer
	// seenReadyOrIdleSinceTF is set by READY and IDLE and cleared by
	// TRANSIENT_FAILURE (reported, or the failover timer firing): a
	// CONNECTING report starts the failover timer only while it is set.
	seenReadyOrIdleSinceTF bool
	// switches and failoverFired are the child's metric handles
	// ([MetricSwitches], [MetricFailoverTimerFires]).
	switches, failoverFired lb.Counter
	// failoverAt is when failover fires, for Describe; meaningful while
	// failover is set.
	failoverAt time.Time
}

type child = childmanager.Child[childData]

// published identifies what the policy sends to its parent: a child's
// state at some generation (it rises only when the child's report
// changes), or one of the policy's own states (seq tells resolver errors
// apart, as each may say something new).
type published struct {
	child *child
	gen   uint64
	own   ownState
	seq   uint64
}

type ownState int

const (
	ownNone ownState = iota
	ownEmptyPriorities
	ownResolverError
)

// priorityBalancer is the priority_experimental policy.
//
// Every method, child hook and timer callback runs inside the tree's
// serialized calls, so nothing is locked. Children may call back
// re-entrantly (a child publishing inline from UpdateClientConnState): the
// updating and choosing flags keep such calls from running the choice in
// the middle of an update or of another choice.
type priorityBalancer struct {
	cc     lb.ClientConn
	opts   lb.BuildOptions
	logger *slog.Logger
	bopts  options

	children *childmanager.Manager[childData]

	// config is the latest config; nil before the first update.
	config *Config
	// resolverState is the latest update's resolver state (its
	// ServiceConfig and Attributes reach every child); addrs holds its
	// addresses grouped by child name, kept for children created later;
	// childDegraded is the Degraded reason of the children's states (its
	// own, and the addresses grouping dropped).
	resolverState resolver.State
	addrs         map[string][]resolver.Address
	childDegraded error

	// updating is set while a parent update (config or resolver error)
	// reaches the children; choosing is set while the choice runs.
	updating bool
	choosing bool

	// current is the child in use, nil when none is.
	current *child
	pub     *childmanager.Publisher[published]
	// resolverErrs counts resolver errors published as the policy's own
	// state.
	resolverErrs uint64
}

func newBalancer(cc lb.ClientConn, opts lb.BuildOptions, bopts options) *priorityBalancer {
	b := &priorityBalancer{
		cc:     cc,
		opts:   opts,
		logger: opts.PolicyLogger(Name),
		bopts:  bopts,
		pub:    childmanager.NewPublisher(cc, func(a, b published) bool { return a == b }, nil),
	}
	b.children = childmanager.New(cc, opts, childmanager.Hooks[childData]{
		StateChanged: b.childStateChanged,
		Removed:      b.childRemoved,
	}, childmanager.WithDeactivationDelay(bopts.deactivationDelay))
	return b
}

// UpdateClientConnState applies a config and addresses (gRFC A56,
// "Configuration Updates"): every existing child is updated, or deactivated
// if the config no longer names it, before the priority is chosen once;
// the chosen child's picker is then published even if unchanged. The
// children's errors are returned joined, each naming its child, so that
// [lb.ErrBadResolverState] from a child reaches the channel.
func (b *priorityBalancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*Config)
	if !ok || cfg == nil {
		return fmt.Errorf("priority: got config %T, want a non-nil *priority.Config", s.BalancerConfig)
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	groups := childmanager.GroupAddresses(b.logger, "priority", s.ResolverState.Addresses, func(name string) bool {
		_, ok := cfg.Children[name]
		return ok
	})
	b.config, b.resolverState, b.addrs = cfg, s.ResolverState, groups.Children
	b.childDegraded = groups.Degraded(s.ResolverState.Degraded)

	var errs []error
	b.updating = true
	for _, c := range b.children.Children() {
		childCfg, ok := cfg.Children[c.Name()]
		switch {
		case !ok && b.bopts.retainRemoved:
			c.Deactivate()
		case !ok:
			c.Remove()
		default:
			c.SetIgnoreResolveNow(childCfg.IgnoreReresolutionRequests)
			errs = append(errs, b.updateChild(c, childCfg))
		}
	}
	b.updating = false

	errs = append(errs, b.choosePriority(true))
	return errors.Join(errs...)
}

// updateChild sends a child its config and addresses, and returns its
// error, naming the child.
func (b *priorityBalancer) updateChild(c *child, childCfg ChildConfig) error {
	rs := resolver.State{
		Addresses:     b.addrs[c.Name()],
		ServiceConfig: b.resolverState.ServiceConfig,
		Attributes:    b.resolverState.Attributes,
		Degraded:      b.childDegraded,
	}
	if err := c.Update(childCfg.Policy, rs); err != nil {
		return fmt.Errorf("priority: child %q: %w", c.Name(), err)
	}
	return nil
}

// ResolverError passes err to every existing child, then runs the choice
// once. With no child, the policy reports TRANSIENT_FAILURE with err, each
// time (each error may say something new). With an empty priority list,
// it reports TRANSIENT_FAILURE with [ErrEmptyPriorities] and err, so that
// picks say why the list is empty when the resolver knows (the eds
// resolver reports which priority lost its endpoints and why).
func (b *priorityBalancer) ResolverError(err error) {
	if b.config != nil && len(b.config.Priorities) == 0 {
		b.resolverErrs++
		b.publish(published{own: ownResolverError, seq: b.resolverErrs}, lb.State{
			ConnectivityState: lb.TransientFailure,
			Picker:            lb.NewErrPicker(lb.TransientFailureError(fmt.Errorf("%w: %w", ErrEmptyPriorities, err))),
		}, true)
		b.updating = true
		b.children.ResolverError(err)
		b.updating = false
		return
	}
	if b.children.Len() == 0 {
		b.current = nil
		b.resolverErrs++
		b.publish(published{own: ownResolverError, seq: b.resolverErrs}, lb.State{
			ConnectivityState: lb.TransientFailure,
			Picker:            lb.NewErrPicker(lb.TransientFailureError(err)),
		}, true)
		return
	}
	b.updating = true
	b.children.ResolverError(err)
	b.updating = false
	if b.config != nil {
		b.logChoiceErr(b.choosePriority(false))
	}
}

// ExitIdle passes the request to the child in use only: children below it
// are deactivated or not created, and waking them would open connections
// that the choice does not want; children above it are CONNECTING or
// TRANSIENT_FAILURE, never IDLE (an IDLE child would have been chosen).
func (b *priorityBalancer) ExitIdle() {
	if b.current != nil {
		b.current.ExitIdle()
	}
}

// Close destroys every child. Its timers end with its scope (see
// [lb.Scope]), and the children's with theirs.
func (b *priorityBalancer) Close() {
	b.children.Close()
	b.current = nil
}

// childStateChanged is the child manager's StateChanged hook: it records
// the child's state, runs the failover timer rules, and runs the choice
// unless an update or a choice is in progress.
func (b *priorityBalancer) childStateChanged(c *child) {
	s := c.State()
	d := &c.Data
	if childmanager.SameState(s, lb.State{ConnectivityState: d.state, Picker: d.picker}) {
		return // the same report again: nothing to apply, nothing to publish
	}
	d.state, d.picker = s.ConnectivityState, s.Picker
	d.gen++
	switch s.ConnectivityState {
	case lb.Ready, lb.Idle:
		d.seenReadyOrIdleSinceTF = true
		b.stopFailoverTimer(c)
	case lb.TransientFailure:
		d.seenReadyOrIdleSinceTF = false
		b.stopFailoverTimer(c)
	case lb.Connecting:
		if d.seenReadyOrIdleSinceTF && d.failover == nil {
			b.startFailoverTimer(c)
		}
	}
	b.logger.Debug("priority: child state", "child_name", c.Name(), "state", s.ConnectivityState)
	b.maybeChoosePriority()
}

// childRemoved is the child manager's Removed hook. The child's failover
// timer ended with the child's scope.
func (b *priorityBalancer) childRemoved(c *child) {
	if b.current == c {
		b.current = nil
	}
}

// maybeChoosePriority runs the choice for an event from a child, unless a
// parent update or a choice is in progress: that one will look at the
// child's new state when it gets to it (gRFC A56, "Configuration Updates").
func (b *priorityBalancer) maybeChoosePriority() {
	if b.updating || b.choosing || b.config == nil {
		return
	}
	b.logChoiceErr(b.choosePriority(false))
}

// logChoiceErr logs the error of a choice made outside a parent update: a
// child created by failover that rejected its update has nobody to return
// the error to. Its own state (normally TRANSIENT_FAILURE) drives the
// choice, and it can ask for re-resolution itself.
func (b *priorityBalancer) logChoiceErr(err error) {
	if err != nil {
		b.logger.Warn("priority: child rejected its update", "error", err)
	}
}

// Describe returns the priority node: the child in use, and each child in
// priority order (then children no longer in the config) with its pending
// failover deadline and, when deactivated, its retention deadline.
func (b *priorityBalancer) Describe() lb.Node {
	n := lb.Node{Policy: Name}
	if b.current != nil {
		n.Current = b.current.Name()
	}
	seen := make(map[string]bool)
	add := func(c *child) {
		if c == nil || seen[c.Name()] {
			return
		}
		seen[c.Name()] = true
		cn := c.Describe()
		if c.Data.failover != nil {
			at := c.Data.failoverAt
			cn.FailoverDeadline = &at
		}
		n.Children = append(n.Children, cn)
	}
	if b.config != nil {
		for _, name := range b.config.Priorities {
			add(b.children.Get(name))
		}
	}
	for _, c := range b.children.Children() {
		add(c)
	}
	return n
}
