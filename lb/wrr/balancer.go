package wrr

import (
	"log/slog"
	"math"
	"math/rand/v2"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/edf"
	"github.com/lbkit/lbkit/lb/endpointlist"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/slowstart"
	"github.com/lbkit/lbkit/lb/weight"
)

// endpoint is the policy's record of one endpoint: the shared list's record
// with the endpoint's weight.
type endpoint = endpointlist.Endpoint[endpointData]

// endpointData is what weighted_round_robin keeps per endpoint. It belongs
// to the serializer; pickers never read it.
type endpointData struct {
	// weight is the endpoint's weight in the last update, at least 1.
	weight uint32
	// unweighted is set when the address carried no weight (weight is 1).
	unweighted bool
	// zeroLogged is set once a weight of 0 has been logged for it.
	zeroLogged bool
	// load is the weight from the endpoint's load reports, shared with
	// the Done of its picks (made at the endpoint's creation).
	load *loadWeight
	// done is the Done of every pick of the endpoint: it records the
	// request's load report in load. Made once, so picks allocate
	// nothing.
	done func(lb.DoneInfo)
}

// balancer is one weighted_round_robin policy instance: an
// [endpointlist.List] (SubConns, states, publication) whose READY pickers
// are EDF schedules.
//
// Every field is owned by the tree's serializer: it is read and written only
// inside Balancer methods and SubConn listeners, which run one at a time.
// Pickers never touch it. The one thing shared with pickers is the
// scheduler of the READY picker (safe for concurrent use) and the SubConns
// it returns.
type balancer struct {
	*endpointlist.List[endpointData]
	rand   *rand.Rand
	logger *slog.Logger

	// cfg is the config of the last update.
	cfg Config
	// ready is the last READY picker published: its schedule (or, if it
	// was never picked from, the one it continued) is carried over into
	// the next one. It is reset by an empty update.
	ready *readyPicker

	// rrFallback and notYetUsable are gRFC A78's metrics, resolved at
	// Build.
	rrFallback, notYetUsable lb.Counter
	// The load report state: see orca.go.
	loadState
}

// UpdateClientConnState takes a new address list (and config) from the
// parent and always publishes a new state and picker, as the specification
// asks for every update. It is O(n) in the number of addresses, plus the
// cost of building the READY picker's schedule (see package edf).
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, err := endpointlist.ConfigOf(b.List, s, func(c Config) *slowstart.Config { return c.SlowStart })
	if err != nil {
		return err
	}
	b.cfg = cfg
	b.penalty.Store(math.Float64bits(cfg.LoadReports.withDefaults().ErrorUtilizationPenalty))
	if len(s.ResolverState.Addresses) == 0 {
		b.ready = nil
	}
	return b.Update(s.ResolverState, b.setWeight)
}

// setWeight records the weight a of an update gives its endpoint.
func (b *balancer) setWeight(a resolver.Address, ep *endpoint) {
	w, ok := weight.Get(a)
	switch {
	case !ok:
		w = 1
	case w == 0:
		w = 1
		if !ep.Data.zeroLogged {
			ep.Data.zeroLogged = true
			b.logger.Warn("wrr: endpoint weight 0 treated as 1", "addr", a.Addr, "server_name", a.ServerName)
		}
	}
	ep.Data.weight, ep.Data.unweighted = w, !ok
	if ep.Data.load == nil {
		l := new(loadWeight)
		ep.Data.load = l
		ep.Data.done = func(di lb.DoneInfo) { b.onLoad(l, di) }
	}
}

// buildReadyPicker returns a picker over the READY endpoints, in list
// order. It continues the most recent schedule that has been picked from,
// if that schedule has two endpoints or more: a picker nobody used is
// skipped over (its schedule is still where it started), and a schedule of
// one endpoint has no position to keep. Otherwise it starts a new schedule,
// at a random point if the config asks for it.
func (b *balancer) buildReadyPicker(ready []*endpoint) (lb.Picker, error) {
	weights, raw := make([]uint32, len(ready)), make([]float64, len(ready))
	counts := b.scheduleWeights(ready, b.clock.Now(), weights, raw)
	b.recordMetrics(weights, raw, counts)
	entries := make([]edf.Entry[*endpoint], len(ready))
	maxW := uint32(0)
	for _, w := range weights {
		maxW = max(maxW, w)
	}
	slow := b.SlowStart()
	res := slow.Resolution(maxW)
	for i, ep := range ready {
		// The effective weight: the scheduled weight (configured, or from
		// load reports, gRFC A58) times the slow start factor (exactly
		// the scheduled weight when nothing ramps), as A100 says: the
		// scaling "is applied to whatever weight is being used".
		entries[i] = edf.Entry[*endpoint]{Item: ep, Weight: slow.Weight(ep, weights[i], res)}
	}
	slow.RecordPicker(ready) // gRFC A100, per scheduler made
	b.readyEndpoints, b.readyWeights = append(b.readyEndpoints[:0], ready...), weights
	var prev *edf.Scheduler[*endpoint]
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
		// Not reachable: READY SubConns exist and their weights are at
		// least 1. The list fails requests rather than hide it.
		return nil, err
	}
	b.ready = &readyPicker{sched: s, base: prev}
	return b.ready, nil
}

// Describe returns the node with each endpoint's weight.
func (b *balancer) Describe() lb.Node {
	return b.List.Describe(Name, func(ep *endpoint, e *lb.Endpoint) { e.Weight = ep.Data.weight })
}
