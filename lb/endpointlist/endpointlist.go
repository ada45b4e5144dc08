package endpointlist

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/hashkey"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/slowstart"
	"github.com/lbkit/lbkit/lb/weight"
)

// Endpoint is the list's record of one endpoint and its SubConn, with the
// policy's own per-endpoint data.
//
// SubConn is set before any picker can see the record and never changes, so
// pickers may read it concurrently. Data belongs to the policy: the list
// never reads or writes it. The record lives as long as the endpoint stays
// in the updates, across any number of pickers, which makes Data the place
// for state that must outlive a picker (least_request's in-flight counter).
// Every other field belongs to the tree's serializer.
type Endpoint[T any] struct {
	// SubConn is the endpoint's SubConn.
	SubConn lb.SubConn
	// Data is the policy's data for the endpoint; its zero value when the
	// endpoint is created.
	Data T

	// key identifies the endpoint; see Key.
	key resolver.Address
	// counted is the state the aggregation counts for the SubConn; see
	// countedState.
	counted lb.ConnectivityState
	// gen is the last update that listed the endpoint.
	gen uint64
	// removed is set when the list shuts the SubConn down; its listener
	// ignores everything after.
	removed bool
	// draining is set while the last update marked the endpoint draining
	// (package draining).
	draining bool
}

// Draining reports whether the last update marked the endpoint draining
// ([draining.Is]): the list leaves it out of the READY set passed to
// BuildPicker while another READY endpoint is not draining. Serializer
// only.
func (e *Endpoint[T]) Draining() bool { return e.draining }

// Key returns what identifies addr's endpoint: addr with its weight, hash
// key and draining attributes cleared. Addresses that differ only in those
// are one endpoint, so an update that changes only them keeps the
// endpoint's SubConn and connection (a draining endpoint's requests in
// flight finish on it); addresses that differ in Addr, ServerName or any
// other attribute are distinct.
func Key(addr resolver.Address) resolver.Address {
	return draining.Clear(hashkey.Clear(weight.Clear(addr)))
}

// Policy is what a leaf policy tells its [List].
type Policy[T any] struct {
	// Name prefixes the list's errors and log messages, such as "wrr".
	Name string
	// BuildPicker returns the READY picker over ready, the READY endpoints
	// in update order (never empty), without the draining ones unless
	// every READY endpoint is draining. ready is only valid during the call:
	// the list reuses it. An error publishes TRANSIENT_FAILURE naming it.
	// BuildPicker runs inside the tree's serializer.
	BuildPicker func(ready []*Endpoint[T]) (lb.Picker, error)
	// ResolveOnDisconnect, when true, asks the parent to re-resolve
	// ([lb.ClientConn.ResolveNow]) whenever a SubConn reports
	// TRANSIENT_FAILURE or loses its READY connection (READY to IDLE), as
	// gRPC's round_robin does. Default: false.
	ResolveOnDisconnect bool
	// OnReady, when not nil, is called with an endpoint each time the
	// list starts counting it as READY (a new endpoint's first READY, and
	// every return to READY after it left), after the list's slow start
	// tracker started the endpoint's ramp and before the picker that
	// includes it is built. It runs inside the tree's serializer.
	// weighted_round_robin restarts its load-report blackout (gRFC A58)
	// there.
	OnReady func(ep *Endpoint[T])
}

// List is the endpoint list of one leaf policy. Create it with [New]. It
// implements ResolverError, ExitIdle and Close of [lb.Balancer]; the policy
// implements UpdateClientConnState with [List.Update].
//
// Every method must be called inside the tree's serializer, like any
// balancer method; the list takes no lock.
type List[T any] struct {
	cc     lb.ClientConn
	sched  lb.Scheduler
	logger *slog.Logger
	policy Policy[T]
	// slow ramps the endpoints that just became READY; see SlowStart.
	slow *slowstart.Tracker[*Endpoint[T]]

	// list holds one record per endpoint of the last update, in the order
	// of the endpoints' first addresses.
	list []*Endpoint[T]
	// byKey indexes list by endpoint key.
	byKey map[resolver.Address]*Endpoint[T]
	// gen numbers updates; a record whose gen is the current one has been
	// seen in the update being processed, which de-duplicates in O(1).
	gen uint64
	// counter counts the records of list by their counted state.
	counter lb.StateCounter
	// ready is the scratch slice passed to BuildPicker.
	ready []*Endpoint[T]

	// state is the last state published. Before the first publication it
	// is IDLE, which the list never publishes.
	state lb.ConnectivityState
	// lastConnErr is the most recent connection error of any SubConn (or
	// failure to create one).
	lastConnErr error
	// resolverErr is the resolver error reported since the last update,
	// or nil.
	resolverErr error
	// rebuildScheduled is set while a coalesced rebuild waits on sched;
	// stale is set when the READY set changed after the last published
	// picker was built. See markReadySetChanged.
	rebuildScheduled bool
	stale            bool
}

// New returns an empty list that reports to cc, coalesces READY-set
// rebuilds on opts.Scheduler, runs its slow start ([List.SlowStart]) on
// opts' scheduler and clock, and logs to logger.
func New[T any](cc lb.ClientConn, opts lb.BuildOptions, logger *slog.Logger, p Policy[T]) *List[T] {
	l := &List[T]{
		cc:     cc,
		sched:  opts.Scheduler,
		logger: logger,
		policy: p,
		byKey:  make(map[resolver.Address]*Endpoint[T]),
		state:  lb.Idle,
	}
	l.slow = slowstart.NewTracker[*Endpoint[T]](opts, l.Refresh)
	return l
}

// SlowStart returns the list's slow start tracker: the list starts an
// endpoint's ramp each time it becomes READY ([slowstart.Tracker.Ready])
// and publishes a new READY picker at each of the tracker's ticks
// ([List.Refresh]); the policy reads the factors when it builds a picker
// and puts a config in force with [ConfigOf]. Without a config the tracker
// does nothing and every factor is 1. Serializer only.
func (l *List[T]) SlowStart() *slowstart.Tracker[*Endpoint[T]] { return l.slow }

// ConfigOf returns the policy's config C in s ([lb.ConfigOf], which takes
// a C, a *C or nil) after putting its slow start config, slowStart of it,
// in force on l's tracker ([slowstart.Tracker.SetConfig]). An error, a
// config of another type or an invalid slow start config (which then
// wraps [lb.ErrBadResolverState]), is logged and returned prefixed with
// the policy's name, and changes nothing: the policy returns it from
// UpdateClientConnState, ignoring the update. Serializer only.
func ConfigOf[C, T any](l *List[T], s lb.ClientConnState, slowStart func(C) *slowstart.Config) (C, error) {
	cfg, err := lb.ConfigOf[C](l.policy.Name, s.BalancerConfig)
	if err == nil {
		if err = l.slow.SetConfig(slowStart(cfg)); err != nil {
			err = fmt.Errorf("%s: %w: %w", l.policy.Name, err, lb.ErrBadResolverState)
		}
	}
	if err != nil {
		l.logger.Error(l.policy.Name+": update ignored", "error", err)
		var zero C
		return zero, err
	}
	return cfg, nil
}

// errorf returns an error prefixed with the policy's name.
func (l *List[T]) errorf(format string, args ...any) error {
	return fmt.Errorf(l.policy.Name+": "+format, args...)
}

// Update takes a new resolver state from the parent and always publishes a
// new state and picker. Each address names an endpoint by its [Key]; the first
// address of an endpoint gives its place, later ones are dropped. visit,
// when not nil, is called with each address that gives an endpoint its
// place, and the endpoint (new or kept), before the picker is built.
// Endpoints no longer listed are shut down; new ones get a SubConn that is
// asked to connect at once.
//
// An empty list shuts every SubConn down, publishes TRANSIENT_FAILURE with
// an error wrapping [resolver.ErrNoAddresses] and the state's Degraded
// reason ([resolver.State.Explain]), and returns it wrapping
// [lb.ErrBadResolverState]. Update is O(n) plus
// the cost of BuildPicker.
func (l *List[T]) Update(s resolver.State, visit func(resolver.Address, *Endpoint[T])) error {
	addrs := s.Addresses
	l.resolverErr = nil
	l.gen++
	list := make([]*Endpoint[T], 0, len(addrs))
	for _, a := range addrs {
		key := Key(a)
		ep := l.byKey[key]
		if ep != nil && ep.gen == l.gen {
			continue // a later address of an endpoint already listed
		}
		if ep == nil {
			if ep = l.newEndpoint(a, key); ep == nil {
				continue
			}
		}
		ep.gen = l.gen
		ep.draining = draining.Is(a)
		if visit != nil {
			visit(a, ep)
		}
		list = append(list, ep)
	}
	for _, ep := range l.list {
		if ep.gen != l.gen {
			l.remove(ep)
		}
	}
	l.list = list

	if len(addrs) == 0 {
		err := s.Explain(l.errorf("%w", resolver.ErrNoAddresses))
		l.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(err)))
		return fmt.Errorf("%w: %w", err, lb.ErrBadResolverState)
	}
	l.regenerate()
	return nil
}

// Endpoints returns the endpoints of the last update, in order. The slice
// belongs to the list: read it, do not keep it.
func (l *List[T]) Endpoints() []*Endpoint[T] { return l.list }

// newEndpoint creates the SubConn of a new endpoint and asks it to connect.
// It returns nil, and records the error, if the SubConn cannot be created.
func (l *List[T]) newEndpoint(addr, key resolver.Address) *Endpoint[T] {
	ep := &Endpoint[T]{key: key, counted: lb.Connecting}
	sc, err := l.cc.NewSubConn([]resolver.Address{addr}, lb.NewSubConnOptions{
		StateListener: func(s lb.SubConnState) { l.updateSubConnState(ep, s) },
		HealthCheck:   true, // gRFC A17: an unhealthy endpoint is not READY
	})
	if err != nil {
		l.lastConnErr = l.errorf("creating a SubConn for %v: %w", addr, err)
		l.logger.Error(l.policy.Name+": endpoint skipped", "error", l.lastConnErr)
		return nil
	}
	ep.SubConn = sc
	l.byKey[key] = ep
	l.counter.Add(ep.counted)
	sc.Connect()
	return ep
}

// remove shuts ep down and forgets it.
func (l *List[T]) remove(ep *Endpoint[T]) {
	ep.removed = true
	delete(l.byKey, ep.key)
	l.counter.Remove(ep.counted)
	ep.SubConn.Shutdown()
}

// countedState returns the state the aggregation counts for a SubConn that
// reported st while counted as old:
//
//   - IDLE is counted as CONNECTING: the list reconnects at once, so the
//     SubConn is on its way to connecting (this also covers the moment
//     after creation, before the first report);
//   - after TRANSIENT_FAILURE, IDLE and CONNECTING are still counted as
//     TRANSIENT_FAILURE, until the SubConn is READY ("sticky");
//   - READY, CONNECTING and TRANSIENT_FAILURE are otherwise counted as
//     reported.
func countedState(old, st lb.ConnectivityState) lb.ConnectivityState {
	if st == lb.Idle {
		st = lb.Connecting
	}
	if old == lb.TransientFailure && st == lb.Connecting {
		return lb.TransientFailure
	}
	return st
}

// updateSubConnState is the listener of ep's SubConn. It reconnects an IDLE
// SubConn at once and publishes a new picker only when something a picker
// shows changed: the aggregate state, the READY set while READY, or the
// connection error while TRANSIENT_FAILURE.
func (l *List[T]) updateSubConnState(ep *Endpoint[T], s lb.SubConnState) {
	if ep.removed {
		return
	}
	st := s.ConnectivityState
	old := ep.counted
	switch st {
	case lb.Shutdown:
		return // only delivered after remove, which already forgot ep
	case lb.Idle:
		ep.SubConn.Connect()
		if l.policy.ResolveOnDisconnect && old == lb.Ready {
			l.cc.ResolveNow()
		}
	case lb.TransientFailure:
		l.lastConnErr = s.ConnectionError
		if l.lastConnErr == nil {
			l.lastConnErr = l.errorf("connection failed (no error reported)")
		}
		if l.policy.ResolveOnDisconnect {
			l.cc.ResolveNow()
		}
	}
	ep.counted = countedState(old, st)
	if ep.counted != old {
		l.counter.Remove(old)
		l.counter.Add(ep.counted)
	}
	if ep.counted == lb.Ready && old != lb.Ready {
		l.slow.Ready(ep)
		if l.policy.OnReady != nil {
			l.policy.OnReady(ep)
		}
	}
	agg := l.counter.Aggregate()
	readyChanged := (old == lb.Ready) != (ep.counted == lb.Ready)
	switch {
	case agg != l.state:
	case agg == lb.Ready && readyChanged:
		l.markReadySetChanged()
		return
	case agg == lb.TransientFailure && st == lb.TransientFailure:
	default:
		return // the published picker still says everything
	}
	l.regenerate()
}

// markReadySetChanged rebuilds the READY picker after a SubConn joined or
// left the READY set while the policy stays READY. The rebuild is O(n), so
// instead of running it at once it is scheduled behind the calls already
// queued on the tree's scheduler, and every READY-set change until it runs
// joins it: n endpoints that become READY in one burst (their reports queue
// while the serializer works) cost one rebuild, not n, which made a
// 10,000-endpoint start O(n^2). The published picker meanwhile still names
// only SubConns that were READY; a pick on one that has since left READY
// waits for the next picker, as the L9 contract says. Any other publication
// (a state change, an update) builds from the current set and makes the
// scheduled rebuild a no-op.
func (l *List[T]) markReadySetChanged() {
	l.stale = true
	if l.rebuildScheduled {
		return
	}
	l.rebuildScheduled = l.sched.Schedule(func() {
		l.rebuildScheduled = false
		if !l.stale || l.state != lb.Ready {
			return
		}
		l.regenerate()
	})
	if !l.rebuildScheduled {
		l.regenerate() // the scheduler is closed: publish now rather than never
	}
}

// Refresh publishes a new READY picker over the same endpoints when the
// list is READY, and does nothing otherwise: a policy calls it when what its
// pickers show changed without an update, such as slow start's factors.
// It must be called inside the tree's serializer.
func (l *List[T]) Refresh() {
	if l.state == lb.Ready {
		l.regenerate()
	}
}

// regenerate publishes the aggregate state with a new picker.
func (l *List[T]) regenerate() {
	l.stale = false
	switch agg := l.counter.Aggregate(); agg {
	case lb.Ready:
		if n := l.counter.Count(lb.Ready); cap(l.ready) < n {
			l.ready = make([]*Endpoint[T], 0, n)
		}
		l.ready = l.ready[:0]
		for _, ep := range l.list {
			if ep.counted == lb.Ready && !ep.draining {
				l.ready = append(l.ready, ep)
			}
		}
		if len(l.ready) == 0 { // every READY endpoint is draining: they serve
			for _, ep := range l.list {
				if ep.counted == lb.Ready {
					l.ready = append(l.ready, ep)
				}
			}
		}
		p, err := l.policy.BuildPicker(l.ready)
		clear(l.ready) // drop the references until the next rebuild
		if err != nil {
			l.logger.Error(l.policy.Name+": building the picker", "error", err)
			l.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(err)))
			return
		}
		l.publish(lb.Ready, p)
	case lb.TransientFailure:
		l.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(l.failure())))
	default:
		l.publish(agg, lb.NewQueuePicker())
	}
}

// failure returns the error of the TRANSIENT_FAILURE picker: the resolver
// error reported since the last update, if any, and the last connection
// error.
func (l *List[T]) failure() error {
	switch {
	case l.resolverErr != nil && l.lastConnErr != nil:
		return l.errorf("name resolver error: %w; last connection error: %w", l.resolverErr, l.lastConnErr)
	case l.resolverErr != nil:
		return l.errorf("name resolver error: %w", l.resolverErr)
	case l.lastConnErr != nil:
		return l.errorf("no endpoint is reachable; last connection error: %w", l.lastConnErr)
	default:
		return errors.New(l.policy.Name + ": no SubConn")
	}
}

// ResolverError reports TRANSIENT_FAILURE naming err when the list has no
// endpoint (no usable update yet, or an empty one) or is in
// TRANSIENT_FAILURE; otherwise the last addresses stay in force and err is
// only remembered, to be named if the policy fails before the next update.
func (l *List[T]) ResolverError(err error) {
	l.resolverErr = err
	if len(l.list) > 0 && l.state != lb.TransientFailure {
		l.logger.Debug(l.policy.Name+": resolver error ignored", "state", l.state, "error", err)
		return
	}
	l.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(l.failure())))
}

// ExitIdle does nothing: the list reconnects every IDLE SubConn as soon as
// it reports IDLE, so it is never IDLE itself.
func (l *List[T]) ExitIdle() {}

// Close shuts down every SubConn. It is the list's last call: the parent
// calls nothing after it, and its scope drops the scheduled rebuild and
// the SubConns' late states (see [lb.Scope]).
func (l *List[T]) Close() {
	for _, ep := range l.list {
		l.remove(ep)
	}
	l.list = nil
}

// publish reports a state and picker to the parent.
func (l *List[T]) publish(s lb.ConnectivityState, p lb.Picker) {
	if l.state != s {
		l.logger.Debug(l.policy.Name+": state change", "from", l.state, "to", s)
	}
	l.state = s
	l.cc.UpdateState(lb.State{ConnectivityState: s, Picker: p})
}

// Describe returns a node for policy with every endpoint, in list order:
// its address, its SubConn and the state the list counts for it, then
// whatever fill (when not nil) adds from the policy's data. LastError is
// the most recent connection or resolver error.
func (l *List[T]) Describe(policy string, fill func(*Endpoint[T], *lb.Endpoint)) lb.Node {
	n := lb.Node{Policy: policy, Endpoints: make([]lb.Endpoint, len(l.list))}
	if l.resolverErr != nil {
		n.LastError = l.resolverErr.Error()
	} else {
		n.LastError = lb.ErrorString(l.lastConnErr)
	}
	for i, ep := range l.list {
		e := &n.Endpoints[i]
		e.Address, e.SubConn, e.State, e.Draining = ep.key.Addr, ep.SubConn, ep.counted, ep.draining
		if fill != nil {
			fill(ep, e)
		}
	}
	return n
}
