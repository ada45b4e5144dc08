package roundrobin

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/edf"
	"github.com/lbkit/lbkit/lb/endpointlist"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// Name is the policy's name in loadBalancingConfig and in the [lb] registry,
// the name gRPC gives it.
const Name = "round_robin"

func init() { lb.Register(Builder{}) }

// Builder builds round_robin balancers and parses their config (the
// policy's ReadConfig and Build). The zero value is ready to use; it is
// what this package registers under [Name].
type Builder = endpointlist.Builder[policy]

// policy is round_robin's [endpointlist.Leaf].
type policy struct{}

// Name returns [Name].
func (policy) Name() string { return Name }

// Build returns a new round_robin balancer reporting to cc. It accepts, as
// [lb.ClientConnState.BalancerConfig], a [Config], a *Config or nil (the
// zero Config). Build publishes nothing; the first UpdateClientConnState
// does.
func (policy) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &balancer{rand: opts.Rand}
	b.List = endpointlist.NewCounted(cc, opts, endpointlist.Policy[struct{}]{
		Name: Name, BuildPicker: b.buildPicker, ResolveOnDisconnect: true,
	})
	return b
}

// endpoint is the list's record of one endpoint; round_robin keeps no data
// of its own.
type endpoint = endpointlist.Endpoint[struct{}]

// balancer is one round_robin policy instance: an [endpointlist.List]
// whose READY pickers rotate over the READY endpoints, or, while an
// endpoint is in its slow start window, follow an EDF schedule over their
// factors. Its fields belong to the tree's serializer.
type balancer struct {
	*endpointlist.List[struct{}]
	// rand draws each picker's starting index.
	rand *rand.Rand
	// ramp is the schedule of the last slow start picker, continued by
	// the next one; nil while no endpoint ramps.
	ramp *edf.Scheduler[*endpoint]
}

// UpdateClientConnState takes the parent's addresses and config; weights
// are ignored. It always publishes a new state and picker.
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	if _, err := endpointlist.ConfigOf(b.List, s, func(c Config) *slowstart.Config { return c.SlowStart }); err != nil {
		return err
	}
	return b.Update(s.ResolverState, nil)
}

// buildPicker returns a picker over ready: while an endpoint ramps, an EDF
// schedule over the endpoints' slow start weights; otherwise a rotation
// that starts at an index drawn uniformly with the tree's random source.
func (b *balancer) buildPicker(ready []*endpoint) (lb.Picker, error) {
	b.SlowStart().RecordPicker(ready) // lbkit.lb.endpoints_in_slow_start
	if b.SlowStart().Ramping() {
		return b.rampPicker(ready)
	}
	b.ramp = nil
	p := &picker{results: make([]lb.PickResult, len(ready))}
	for i, ep := range ready {
		p.results[i] = lb.PickResult{SubConn: ep.SubConn}
	}
	p.next.Store(uint64(b.rand.IntN(len(ready))))
	return p, nil
}

// rampPicker returns an EDF picker whose weights are the endpoints' slow
// start factors (each endpoint's base weight being 1). It continues the
// last ramp's schedule, so that the re-weighting every tick does not
// restart it; the first starts at a random point of its period.
func (b *balancer) rampPicker(ready []*endpoint) (lb.Picker, error) {
	slow := b.SlowStart()
	res := slow.Resolution(1)
	entries := make([]edf.Entry[*endpoint], len(ready))
	for i, ep := range ready {
		entries[i] = edf.Entry[*endpoint]{Item: ep, Weight: slow.Weight(ep, 1, res)}
	}
	var opts []edf.Option
	if b.ramp == nil {
		opts = append(opts, edf.WithRandomStart(b.rand))
	}
	s, err := edf.NewFrom(b.ramp, entries, opts...)
	if err != nil {
		return nil, err // not reachable: ready is not empty, weights are at least 1
	}
	b.ramp = s
	return rampPicker{s}, nil
}

// picker hands out its SubConns in turn, from its random start. Pick is one
// atomic add: lock-free, and it never allocates.
type picker struct {
	results []lb.PickResult
	next    atomic.Uint64
}

// Pick returns the next SubConn of the rotation.
func (p *picker) Pick(lb.PickInfo) (lb.PickResult, error) {
	n := p.next.Add(1) - 1
	return p.results[n%uint64(len(p.results))], nil
}

// rampPicker picks by an EDF schedule while an endpoint is in its slow
// start window. Pick never allocates and normally takes no lock (see
// edf.Scheduler).
type rampPicker struct{ s *edf.Scheduler[*endpoint] }

// Pick returns the next SubConn of the schedule.
func (p rampPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	return lb.PickResult{SubConn: p.s.Pick().SubConn}, nil
}

// Describe returns the node with every endpoint.
func (b *balancer) Describe() lb.Node { return b.List.Describe(Name, nil) }
