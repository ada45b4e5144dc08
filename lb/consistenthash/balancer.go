package consistenthash

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/textproto"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hashkey"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// endpoint is the balancer's record of one endpoint. Its fields belong to
// the tree's serializer.
type endpoint struct {
	// key identifies the endpoint across updates: its address and server
	// name, whatever its attributes (gRFC A61: ring_hash ignores them
	// when de-duplicating endpoints).
	key resolver.Address
	sc  lb.SubConn
	// node is how the ring sees the endpoint; updated in place when its
	// weight or hash key changes.
	node ringNode
	// state is the state the policy counts for the endpoint, as a lazy,
	// sticky pick_first child would report it (gRFC A42, A61, A62):
	//   - IDLE until something asks it to connect, and again when a READY
	//     connection is lost (it does not reconnect by itself);
	//   - CONNECTING from the moment it is asked to connect;
	//   - TRANSIENT_FAILURE from a failed attempt until it is READY: it
	//     reconnects by itself after each backoff meanwhile.
	state   lb.ConnectivityState
	connErr error
	// connect is the picker's request to connect it (see connectIdle),
	// made once.
	connect func()
	removed bool
	// load counts the endpoint's requests in flight under a load bound;
	// pickers share it (atomic), across pickers, as least_request does.
	load *endpointLoad
}

// endpointLoad is what a bounded-load pick counts for one endpoint, and
// the Done that uncounts it, made once.
type endpointLoad struct {
	active atomic.Int64
	done   func(lb.DoneInfo)
}

// settings is what a policy's config means to the balancer.
type settings struct {
	// header is the request hash header, or "".
	header string
	// balance is the hash balance factor, or 0 for no load bound.
	balance uint32
	// table builds the policy's table over nodes (not empty). A non-nil
	// error comes with a valid table: the one the config falls back to
	// (A42's ring when the endpoints outgrow entriesPerWeight), and says
	// why.
	table func(nodes []ringNode) (table, error)
}

// balancer is one ring_hash_experimental or maglev_experimental policy
// instance: the two differ only in their table. Its fields belong to the
// tree's serializer.
type balancer struct {
	cc     lb.ClientConn
	sched  lb.Scheduler
	rand   *rand.Rand
	logger *slog.Logger
	// name is the policy's name, which prefixes its errors and logs.
	name string
	// read turns an update's config into settings.
	read func(lb.Config) (settings, error)

	cfg settings
	// inFlight counts the requests in flight on every endpoint, under a
	// load bound; shared by pickers.
	inFlight atomic.Int64
	// list holds the endpoints of the last update, in update order; byKey
	// indexes it.
	list  []*endpoint
	byKey map[resolver.Address]*endpoint
	// table is the table over list (its slots index list), rebuilt on
	// every update; weights holds each endpoint's share of the weight, for
	// the load bound.
	table   table
	weights []float64
	// fellBack is set while the table is the config's fallback (see
	// settings.table), so that the warning is logged once per fall.
	fellBack bool

	// counts counts the endpoints of list by state.
	counts lb.StateCounter
	// rebuildScheduled is set while a coalesced picker rebuild waits on
	// sched; stale is set when an endpoint's state changed after the last
	// published picker was built. See changed.
	rebuildScheduled, stale bool

	state       lb.ConnectivityState
	resolverErr error
}

func newBalancer(cc lb.ClientConn, opts lb.BuildOptions, name string, read func(lb.Config) (settings, error)) *balancer {
	return &balancer{
		cc: cc, sched: opts.Scheduler, rand: opts.Rand, logger: opts.PolicyLogger(name), name: name, read: read,
		byKey: make(map[resolver.Address]*endpoint), state: lb.Idle,
	}
}

// UpdateClientConnState takes the parent's endpoints and config, rebuilds
// the table and publishes a new state and picker. New endpoints get a
// SubConn that is not connected: the policy connects lazily.
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, err := b.read(s.BalancerConfig)
	if err != nil {
		b.logger.Error(b.name+": update ignored", "error", err)
		return err
	}
	b.cfg = cfg
	b.resolverErr = nil
	list := make([]*endpoint, 0, len(s.ResolverState.Addresses))
	seen := make(map[resolver.Address]bool, len(s.ResolverState.Addresses))
	for _, a := range s.ResolverState.Addresses {
		key := resolver.Address{Addr: a.Addr, ServerName: a.ServerName}
		if seen[key] {
			continue // a later address of an endpoint already listed
		}
		seen[key] = true
		ep := b.byKey[key]
		if ep == nil {
			if ep = b.newEndpoint(a, key); ep == nil {
				continue
			}
		}
		ep.node = nodeOf(a)
		list = append(list, ep)
	}
	for _, ep := range b.list {
		if !seen[ep.key] {
			b.remove(ep)
		}
	}
	b.list = list
	if len(list) == 0 {
		b.table, b.weights = table{}, nil
		err := s.ResolverState.Explain(fmt.Errorf("%s: %w", b.name, resolver.ErrNoAddresses))
		b.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(err)))
		return fmt.Errorf("%w: %w", err, lb.ErrBadResolverState)
	}
	nodes := make([]ringNode, len(list))
	var sum float64
	for i, ep := range list {
		nodes[i] = ep.node
		sum += float64(ep.node.weight)
	}
	var fallback error
	b.table, fallback = cfg.table(nodes)
	if fallback != nil && !b.fellBack {
		b.logger.Warn(b.name+": entriesPerWeight does not fit, the ring is A42's until it does", "error", fallback)
	}
	b.fellBack = fallback != nil
	b.weights = make([]float64, len(list))
	for i, ep := range list {
		b.weights[i] = float64(ep.node.weight) / sum
	}
	b.changed(true)
	return nil
}

// nodeOf returns how the ring sees the endpoint of a: its A76 hash key or
// else its address, and its weight (1 when unset).
func nodeOf(a resolver.Address) ringNode {
	n := ringNode{hashKey: hashkey.Get(a), weight: 1}
	if n.hashKey == "" {
		n.hashKey = a.Addr
	}
	if w, ok := weight.Get(a); ok && w > 0 {
		n.weight = w
	}
	return n
}

// newEndpoint creates a new endpoint's SubConn, unconnected. It returns
// nil, and logs, if the SubConn cannot be created.
func (b *balancer) newEndpoint(a, key resolver.Address) *endpoint {
	ep := &endpoint{key: key, state: lb.Idle, load: &endpointLoad{}}
	ep.load.done = func(lb.DoneInfo) {
		ep.load.active.Add(-1)
		b.inFlight.Add(-1)
	}
	sc, err := b.cc.NewSubConn([]resolver.Address{a}, lb.NewSubConnOptions{
		StateListener: func(s lb.SubConnState) { b.updateSubConnState(ep, s) },
		HealthCheck:   true, // gRFC A17: an unhealthy endpoint is not READY
	})
	if err != nil {
		b.logger.Error(b.name+": endpoint skipped", "addr", a.Addr, "error", err)
		return nil
	}
	ep.sc = sc
	ep.connect = func() { b.connectIdle(ep) }
	b.byKey[key] = ep
	b.counts.Add(lb.Idle)
	return ep
}

// remove shuts ep down and forgets it.
func (b *balancer) remove(ep *endpoint) {
	ep.removed = true
	delete(b.byKey, ep.key)
	b.counts.Remove(ep.state)
	ep.sc.Shutdown()
}

// setState counts ep in state st.
func (b *balancer) setState(ep *endpoint, st lb.ConnectivityState) {
	b.counts.Remove(ep.state)
	ep.state = st
	b.counts.Add(st)
}

// connectIdle is a picker's request: connect ep if it is (still) IDLE.
func (b *balancer) connectIdle(ep *endpoint) {
	if ep.removed || ep.state != lb.Idle {
		return
	}
	b.startConnecting(ep)
	b.changed(false)
}

// startConnecting asks ep's SubConn to connect and counts it CONNECTING at
// once, as pick_first reports CONNECTING as soon as it is asked to leave
// IDLE.
func (b *balancer) startConnecting(ep *endpoint) {
	b.setState(ep, lb.Connecting)
	ep.sc.Connect()
}

// updateSubConnState is the listener of ep's SubConn.
func (b *balancer) updateSubConnState(ep *endpoint, s lb.SubConnState) {
	if ep.removed {
		return
	}
	old := ep.state
	switch s.ConnectivityState {
	case lb.Shutdown:
		return
	case lb.Ready:
		b.setState(ep, lb.Ready)
	case lb.Connecting:
		if old != lb.TransientFailure {
			b.setState(ep, lb.Connecting)
		}
	case lb.Idle:
		switch old {
		case lb.TransientFailure:
			ep.sc.Connect() // sticky: retry after each backoff, still failed
		case lb.Ready:
			b.setState(ep, lb.Idle)
			b.cc.ResolveNow()
		default:
			b.setState(ep, lb.Idle)
		}
	case lb.TransientFailure:
		b.setState(ep, lb.TransientFailure)
		ep.connErr = s.ConnectionError
		if ep.connErr == nil {
			ep.connErr = fmt.Errorf("%s: connection to %s failed (no error reported)", b.name, ep.key.Addr)
		}
		b.cc.ResolveNow()
	}
	if ep.state == old && s.ConnectivityState != lb.TransientFailure {
		return // the published picker still says everything
	}
	b.changed(false)
}

// aggregate is gRFC A42's aggregation of the endpoints' states, in O(1).
func (b *balancer) aggregate() lb.ConnectivityState {
	c := &b.counts
	failed := c.Count(lb.TransientFailure)
	switch {
	case c.Count(lb.Ready) > 0:
		return lb.Ready
	case failed >= 2:
		return lb.TransientFailure
	case c.Count(lb.Connecting) > 0:
		return lb.Connecting
	case failed == 1 && len(b.list) > 1:
		return lb.Connecting
	case c.Count(lb.Idle) > 0:
		return lb.Idle
	}
	return lb.TransientFailure
}

// changed follows a change of the endpoints or their states. First gRFC
// A61's proactive connection: while the policy is CONNECTING or
// TRANSIENT_FAILURE and no endpoint is connecting, the first IDLE endpoint
// is asked to connect, so that a policy that gets no picks (a lower
// priority's, or one failed over from) still finds out when endpoints come
// back. Then a new picker: published at once when urgent (an update) or
// when the aggregate state changes; otherwise built once for a burst of
// changes, behind the calls already queued on the tree's scheduler, as
// endpointlist coalesces (n endpoints turning READY together cost one
// O(n) picker, not n). Until then the published picker may name an
// endpoint in its old state: a pick it sends to a SubConn that is no
// longer READY waits for the next picker (the L9 contract), and one it
// queues is retried with the next picker, which is on its way.
func (b *balancer) changed(urgent bool) {
	agg := b.aggregate()
	if (agg == lb.Connecting || agg == lb.TransientFailure) && b.counts.Count(lb.Connecting) == 0 {
		for _, ep := range b.list {
			if ep.state == lb.Idle {
				b.startConnecting(ep)
				agg = b.aggregate()
				break
			}
		}
	}
	b.stale = true
	if urgent || agg != b.state {
		b.publishPicker(agg)
		return
	}
	if b.rebuildScheduled {
		return
	}
	b.rebuildScheduled = b.sched.Schedule(func() {
		b.rebuildScheduled = false
		if b.stale {
			b.publishPicker(b.aggregate())
		}
	})
}

// publishPicker publishes agg with a picker over the current states.
func (b *balancer) publishPicker(agg lb.ConnectivityState) {
	b.stale = false
	p := &picker{
		name: b.name, table: b.table, endpoints: make([]pickEndpoint, len(b.list)), sched: b.sched,
		header: b.cfg.header, httpHeader: textproto.CanonicalMIMEHeaderKey(b.cfg.header), anyConnecting: b.counts.Count(lb.Connecting) > 0,
	}
	if b.cfg.balance > 0 {
		p.bound = &loadBound{factor: int64(b.cfg.balance), inFlight: &b.inFlight}
	}
	p.random.Store(b.rand.Uint64())
	for i, ep := range b.list {
		pe := pickEndpoint{state: ep.state, result: lb.PickResult{SubConn: ep.sc}, err: ep.connErr, connect: ep.connect}
		if p.bound != nil {
			pe.result.Done, pe.load, pe.weight = ep.load.done, &ep.load.active, b.weights[i]
		}
		p.endpoints[i] = pe
	}
	if agg == lb.TransientFailure && b.resolverErr != nil {
		err := lb.TransientFailureError(fmt.Errorf("%s: name resolver error: %w", b.name, b.resolverErr))
		b.publish(agg, lb.NewErrPicker(err))
		return
	}
	b.publish(agg, p)
}

// ResolverError keeps the last endpoints in force if there are any and
// the policy is not failing; otherwise it publishes TRANSIENT_FAILURE
// naming err.
func (b *balancer) ResolverError(err error) {
	b.resolverErr = err
	if len(b.list) > 0 && b.state != lb.TransientFailure {
		b.logger.Debug(b.name+": resolver error ignored", "state", b.state, "error", err)
		return
	}
	if len(b.list) == 0 {
		b.publish(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(fmt.Errorf("%s: name resolver error: %w", b.name, err))))
		return
	}
	b.changed(true)
}

// ExitIdle does nothing: connections are started by picks, and by the
// policy itself while it is CONNECTING or failing (gRFC A42, as grpc-go).
func (b *balancer) ExitIdle() {}

// Close shuts every SubConn down.
func (b *balancer) Close() {
	for _, ep := range b.list {
		b.remove(ep)
	}
	b.list = nil
}

// publish reports a state and picker to the parent.
func (b *balancer) publish(s lb.ConnectivityState, p lb.Picker) {
	if b.state != s {
		b.logger.Debug(b.name+": state change", "from", b.state, "to", s)
	}
	b.state = s
	b.cc.UpdateState(lb.State{ConnectivityState: s, Picker: p})
}

// Describe returns the node with every endpoint and the state the policy
// counts for it.
func (b *balancer) Describe() lb.Node {
	n := lb.Node{Policy: b.name, Endpoints: make([]lb.Endpoint, len(b.list))}
	var last error
	for i, ep := range b.list {
		e := &n.Endpoints[i]
		e.Address, e.SubConn, e.State = ep.key.Addr, ep.sc, ep.state
		if ep.connErr != nil {
			last = ep.connErr
		}
	}
	if b.resolverErr != nil {
		last = b.resolverErr
	}
	n.LastError = lb.ErrorString(last)
	return n
}
