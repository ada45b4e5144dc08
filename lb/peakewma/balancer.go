package peakewma

import (
	"math/rand/v2"
	"slices"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// endpoint is the policy's record of one endpoint: the shared list's record
// with the endpoint's estimate and requests in flight.
type endpoint = endpointlist.Endpoint[endpointData]

// balancer is one peak_ewma_experimental policy instance: an
// [endpointlist.List] whose READY pickers choose by peak-EWMA cost. Its
// fields belong to the tree's serializer.
type balancer struct {
	*endpointlist.List[endpointData]
	rand  *rand.Rand
	meter *meter
	// cfg is the effective config of the last update.
	cfg Config
	// scratch holds the estimates of the endpoints kept by an update,
	// for the median a new endpoint starts from.
	scratch []float64
}

// UpdateClientConnState takes a new address list and config from the parent
// and always publishes a new state and picker. Weights are ignored; see
// the package documentation.
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, err := endpointlist.ConfigOf(b.List, s, func(c Config) *slowstart.Config { return c.SlowStart })
	if err != nil {
		return err
	}
	b.cfg = cfg.effective()
	b.meter.set(b.cfg)
	now := b.meter.now()
	start := b.startingEstimate(now)
	return b.Update(s.ResolverState, func(_ resolver.Address, ep *endpoint) {
		if ep.Data.sc == nil {
			ep.Data.init(ep.SubConn, b.meter, start, now)
		}
	})
}

// startingEstimate returns the estimate a new endpoint starts from at meter
// time now: the median of the current endpoints' decayed estimates (the
// mean of the two middle ones for an even count), or the config's
// DefaultRTT when there is no endpoint yet. A new endpoint thus costs what
// a typical one does: it is neither flooded (as an estimate of zero would
// make it) nor starved (as a high default would).
func (b *balancer) startingEstimate(now int64) float64 {
	b.scratch = b.scratch[:0]
	dec := b.meter.decay.Load()
	for _, ep := range b.Endpoints() {
		b.scratch = append(b.scratch, decayed(ep.Data.state.Load(), tick(now), dec))
	}
	n := len(b.scratch)
	if n == 0 {
		return float64(b.cfg.DefaultRTT)
	}
	slices.Sort(b.scratch)
	if n%2 == 1 {
		return b.scratch[n/2]
	}
	return (b.scratch[n/2-1] + b.scratch[n/2]) / 2
}

// buildPicker returns a picker over ready with a seed drawn from the tree's
// random source and, while an endpoint ramps, every endpoint's slow start
// factor at this moment (the tracker's ticks build the next picker).
func (b *balancer) buildPicker(ready []*endpoint) (lb.Picker, error) {
	b.SlowStart().RecordPicker(ready) // lbkit.lb.endpoints_in_slow_start
	entries := make([]*endpointData, len(ready))
	for i, ep := range ready {
		entries[i] = &ep.Data
	}
	p := newPicker(entries, b.meter, b.meter.decay.Load(), b.rand.Uint64())
	if slow := b.SlowStart(); slow.Ramping() {
		p.factors = make([]float64, len(ready))
		for i, ep := range ready {
			p.factors[i] = slow.Factor(ep)
		}
		draw := slowstart.NewSampler(p.factors)
		p.draw = &draw
	}
	return p, nil
}

// Describe returns the node with each endpoint's requests in flight.
func (b *balancer) Describe() lb.Node {
	return b.List.Describe(Name, func(ep *endpoint, e *lb.Endpoint) { e.InFlight = ep.Data.pending() })
}
