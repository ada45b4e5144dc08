package wrr

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/edf"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

var (
	// errZeroAddresses is the picker error after an empty update.
	errZeroAddresses = errors.New("wrr: resolver produced zero addresses")
	// errNoConnectionError stands in for a TRANSIENT_FAILURE report that
	// carries no error.
	errNoConnectionError = errors.New("wrr: connection failed (no error reported)")
	// errNoSubConn is the TRANSIENT_FAILURE error when no connection error
	// has been seen, which only happens when no SubConn could be created.
	errNoSubConn = errors.New("wrr: no SubConn")
)

// balancer is one weighted_round_robin policy instance.
//
// Every field is owned by the tree's serializer: it is read and written only
// inside Balancer methods and SubConn listeners, which run one at a time.
// Pickers never touch it. The one thing shared with pickers is the
// scheduler of the READY picker (safe for concurrent use) and the SubConn
// each subConn record holds, set before any picker can see the record and
// never written again.
type balancer struct {
	cc     lb.ClientConn
	rand   *rand.Rand
	logger *slog.Logger
	// sched is the tree's scheduler, on which READY-set changes coalesce
	// into one picker rebuild (see markReadySetChanged).
	sched lb.Scheduler

	// cfg is the config of the last update.
	cfg Config
	// list holds one record per endpoint of the last update, in the order
	// of the endpoints' first addresses.
	list []*subConn
	// subConns indexes list by endpoint key (see endpointKey).
	subConns map[resolver.Address]*subConn
	// gen numbers updates; a record whose gen is the current one has been
	// seen in the update being processed, which de-duplicates in O(1).
	gen uint64
	// counter counts the records of list by their counted state.
	counter lb.StateCounter

	// state is the last state published. Before the first publication it
	// is IDLE, which the policy never publishes.
	state lb.ConnectivityState
	// ready is the last READY picker published: its schedule (or, if it
	// was never picked from, the one it continued) is carried over into
	// the next one. It is reset by an empty update.
	ready *readyPicker
	// lastConnErr is the most recent connection error of any SubConn (or
	// failure to create one).
	lastConnErr error
	// resolverErr is the resolver error reported since the last update, or
	// nil.
	resolverErr error
	// rebuildScheduled is set while a coalesced rebuild waits on sched;
	// stale is set when the READY set changed after the last published
	// picker was built. See markReadySetChanged.
	rebuildScheduled bool
	stale            bool
	closed           bool
}

// subConn is the policy's record of one endpoint and its SubConn.
type subConn struct {
	// sc is set at creation, before any picker can hold the record, and
	// never changes: pickers read it concurrently.
	sc lb.SubConn

	// The fields below belong to the serializer.

	// key identifies the endpoint; see endpointKey.
	key resolver.Address
	// weight is the endpoint's weight in the last update, at least 1.
	weight uint32
	// counted is the state the aggregation counts for this SubConn; see
	// countedState.
	counted lb.ConnectivityState
	// gen is the last update that listed the endpoint.
	gen uint64
	// zeroLogged is set once a weight of 0 has been logged for it.
	zeroLogged bool
	// removed is set when the policy shuts the SubConn down; the listener
	// ignores everything after.
	removed bool
}

// endpointKey returns what identifies addr's endpoint: addr itself with its
// weight attribute set to 0. Two addresses that differ only in weight are
// one endpoint, so a weight-only update keeps the endpoint's SubConn (and
// its connection); addresses that differ in Addr, ServerName or any other
// attribute are distinct endpoints.
func endpointKey(addr resolver.Address) resolver.Address { return weight.Clear(addr) }

// configOf returns the Config in an update.
func configOf(c lb.Config) (Config, error) {
	switch c := c.(type) {
	case nil:
		return Config{}, nil
	case Config:
		return c, nil
	case *Config:
		if c == nil {
			return Config{}, nil
		}
		return *c, nil
	default:
		return Config{}, fmt.Errorf("wrr: config of type %T, want wrr.Config: %w", c, lb.ErrBadResolverState)
	}
}

// UpdateClientConnState takes a new address list (and config) from the
// parent and always publishes a new state and picker, as the specification
// asks for every update. It is O(n) in the number of addresses, plus the
// cost of building the READY picker's schedule (see package edf).
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	if b.closed {
		return nil
	}
	cfg, err := configOf(s.BalancerConfig)
	if err != nil {
		b.logger.Error("wrr: update ignored", "error", err)
		return err
	}
	b.cfg = cfg
	b.resolverErr = nil
	addrs := s.ResolverState.Addresses

	b.gen++
	list := make([]*subConn, 0, len(addrs))
	for _, a := range addrs {
		key := endpointKey(a)
		sd := b.subConns[key]
		if sd != nil && sd.gen == b.gen {
			continue // a later address of an endpoint already listed
		}
		if sd == nil {
			if sd = b.newSubConn(a, key); sd == nil {
				continue
			}
		}
		sd.gen = b.gen
		w, ok := weight.Get(a)
		switch {
		case !ok:
			w = 1
		case w == 0:
			w = 1
			if !sd.zeroLogged {
				sd.zeroLogged = true
				b.logger.Warn("wrr: endpoint weight 0 treated as 1", "address", a.Addr, "server_name", a.ServerName)
			}
		}
		sd.weight = w
		list = append(list, sd)
	}
	for _, sd := range b.list {
		if sd.gen != b.gen {
			b.remove(sd)
		}
	}
	b.list = list

	if len(addrs) == 0 {
		b.ready = nil
		b.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(errZeroAddresses)))
		return fmt.Errorf("%w: %w", errZeroAddresses, lb.ErrBadResolverState)
	}
	b.regenerate()
	return nil
}

// newSubConn creates the SubConn of a new endpoint and asks it to connect.
// It returns nil, and records the error, if the SubConn cannot be created.
func (b *balancer) newSubConn(addr, key resolver.Address) *subConn {
	sd := &subConn{key: key, counted: lb.Connecting}
	sc, err := b.cc.NewSubConn([]resolver.Address{addr}, lb.NewSubConnOptions{
		StateListener: func(s lb.SubConnState) { b.updateSubConnState(sd, s) },
	})
	if err != nil {
		b.lastConnErr = fmt.Errorf("wrr: creating a SubConn for %v: %w", addr, err)
		b.logger.Error("wrr: endpoint skipped", "error", b.lastConnErr)
		return nil
	}
	sd.sc = sc
	b.subConns[key] = sd
	b.counter.Add(sd.counted)
	sc.Connect()
	return sd
}

// remove shuts sd down and forgets it.
func (b *balancer) remove(sd *subConn) {
	sd.removed = true
	delete(b.subConns, sd.key)
	b.counter.Remove(sd.counted)
	sd.sc.Shutdown()
}

// countedState returns the state the aggregation counts for a SubConn that
// reported st while counted as old:
//
//   - IDLE is counted as CONNECTING: the policy reconnects at once, so
//     the SubConn is on its way to connecting (this also covers the
//     moment after creation, before the first report);
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

// updateSubConnState is the listener of sd's SubConn. It reconnects an
// IDLE SubConn at once and publishes a new picker only when something a
// picker shows changed: the aggregate state, the READY set while READY, or
// the connection error while TRANSIENT_FAILURE.
func (b *balancer) updateSubConnState(sd *subConn, s lb.SubConnState) {
	if b.closed || sd.removed {
		return
	}
	st := s.ConnectivityState
	switch st {
	case lb.Shutdown:
		return // only delivered after remove, which already forgot sd
	case lb.Idle:
		sd.sc.Connect()
	case lb.TransientFailure:
		b.lastConnErr = s.ConnectionError
		if b.lastConnErr == nil {
			b.lastConnErr = errNoConnectionError
		}
	}
	old := sd.counted
	sd.counted = countedState(old, st)
	if sd.counted != old {
		b.counter.Remove(old)
		b.counter.Add(sd.counted)
	}
	agg := b.counter.Aggregate()
	readyChanged := (old == lb.Ready) != (sd.counted == lb.Ready)
	switch {
	case agg != b.state:
	case agg == lb.Ready && readyChanged:
		b.markReadySetChanged()
		return
	case agg == lb.TransientFailure && st == lb.TransientFailure:
	default:
		return // the published picker still says everything
	}
	b.regenerate()
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
func (b *balancer) markReadySetChanged() {
	b.stale = true
	if b.rebuildScheduled {
		return
	}
	b.rebuildScheduled = b.sched.Schedule(func() {
		b.rebuildScheduled = false
		if b.closed || !b.stale || b.state != lb.Ready {
			return
		}
		b.regenerate()
	})
	if !b.rebuildScheduled {
		b.regenerate() // the scheduler is closed: publish now rather than never
	}
}

// regenerate publishes the aggregate state with a new picker.
func (b *balancer) regenerate() {
	b.stale = false
	switch agg := b.counter.Aggregate(); agg {
	case lb.Ready:
		p, err := b.buildReadyPicker()
		if err != nil {
			// Not reachable: READY SubConns exist and their weights are
			// at least 1. Fail requests rather than hide it.
			b.logger.Error("wrr: building the picker", "error", err)
			b.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(err)))
			return
		}
		b.publish(lb.Ready, p)
	case lb.TransientFailure:
		b.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(b.failure())))
	default:
		b.publish(agg, lb.NewQueuePicker())
	}
}

// buildReadyPicker returns a picker over the READY SubConns, in list
// order. It continues the most recent schedule that has been picked from,
// if that schedule has two endpoints or more: a picker nobody used is
// skipped over (its schedule is still where it started), and a schedule of
// one endpoint has no position to keep. Otherwise it starts a new schedule,
// at a random point if the config asks for it.
func (b *balancer) buildReadyPicker() (*readyPicker, error) {
	entries := make([]edf.Entry[*subConn], 0, b.counter.Count(lb.Ready))
	for _, sd := range b.list {
		if sd.counted == lb.Ready {
			entries = append(entries, edf.Entry[*subConn]{Item: sd, Weight: sd.weight})
		}
	}
	var prev *edf.Scheduler[*subConn]
	if p := b.ready; p != nil {
		prev = p.base
		if p.picked.Load() {
			prev = p.sched
		}
	}
	if prev != nil && prev.Len() < 2 {
		prev = nil
	}
	var opts []edf.Option
	if b.cfg.RandomStart && prev == nil {
		opts = append(opts, edf.WithRandomStart(b.rand))
	}
	s, err := edf.NewFrom(prev, entries, opts...)
	if err != nil {
		return nil, err
	}
	b.ready = &readyPicker{sched: s, base: prev}
	return b.ready, nil
}

// failure returns the error of the TRANSIENT_FAILURE picker: the resolver
// error reported since the last update, if any, and the last connection
// error.
func (b *balancer) failure() error {
	switch {
	case b.resolverErr != nil && b.lastConnErr != nil:
		return fmt.Errorf("wrr: name resolver error: %w; last connection error: %w", b.resolverErr, b.lastConnErr)
	case b.resolverErr != nil:
		return fmt.Errorf("wrr: name resolver error: %w", b.resolverErr)
	case b.lastConnErr != nil:
		return fmt.Errorf("wrr: no endpoint is reachable; last connection error: %w", b.lastConnErr)
	default:
		return errNoSubConn
	}
}

// ResolverError reports TRANSIENT_FAILURE naming err when the policy has
// no endpoint (no usable update yet, or an empty one) or is in
// TRANSIENT_FAILURE; otherwise the last addresses stay in force and err is
// only remembered, to be named if the policy fails before the next update.
func (b *balancer) ResolverError(err error) {
	if b.closed {
		return
	}
	b.resolverErr = err
	if len(b.list) > 0 && b.state != lb.TransientFailure {
		b.logger.Debug("wrr: resolver error ignored", "state", b.state, "error", err)
		return
	}
	b.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(b.failure())))
}

// ExitIdle does nothing: the policy reconnects every IDLE SubConn as soon as
// it reports IDLE, so it is never IDLE itself.
func (b *balancer) ExitIdle() {}

// Close shuts down every SubConn. Later calls do nothing.
func (b *balancer) Close() {
	if b.closed {
		return
	}
	b.closed = true
	for _, sd := range b.list {
		b.remove(sd)
	}
	b.list = nil
	b.ready = nil
}

// publish reports a state and picker to the parent.
func (b *balancer) publish(s lb.ConnectivityState, p lb.Picker) {
	if b.state != s {
		b.logger.Debug("wrr: state change", "from", b.state, "to", s)
	}
	b.state = s
	b.cc.UpdateState(lb.State{ConnectivityState: s, Picker: p})
}
