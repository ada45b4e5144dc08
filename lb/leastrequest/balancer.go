package leastrequest

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// endpoint is the policy's record of one endpoint: the shared list's record
// with the endpoint's outstanding-request counter.
type endpoint = endpointlist.Endpoint[endpointData]

// endpointData is what least_request keeps per endpoint. It lives as long as
// the endpoint's SubConn, across every picker built meanwhile, so requests
// picked from one picker are still counted by the next.
//
// Pickers hold pointers to it: what a pick reads (the counter, the SubConn,
// the Done callback) is in one small struct, so that sampling an endpoint
// touches one cache line.
type endpointData struct {
	// active counts the endpoint's outstanding requests: incremented by
	// Pick, decremented by done, never below zero. Pickers share it; it
	// is atomic.
	active atomic.Int64
	// sc and done are set once, when the endpoint is created, before any
	// picker holds the record. done is the PickResult.Done of the
	// endpoint's picks, made once so that Pick does not allocate.
	sc   lb.SubConn
	done func(lb.DoneInfo)
}

// balancer is one least_request_experimental policy instance: an
// [endpointlist.List] whose READY pickers sample choiceCount endpoints per
// pick. Its fields belong to the tree's serializer.
type balancer struct {
	*endpointlist.List[endpointData]
	rand *rand.Rand
	// cfg is the config of the last update.
	cfg Config
}

// UpdateClientConnState takes a new address list and config from the parent
// and always publishes a new state and picker. Weights are ignored; see
// the package documentation.
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, err := endpointlist.ConfigOf(b.List, s, func(c Config) *slowstart.Config { return c.SlowStart })
	if err != nil {
		return err
	}
	b.cfg = cfg
	return b.Update(s.ResolverState, initEndpoint)
}

// initEndpoint gives a new endpoint its Done callback.
func initEndpoint(_ resolver.Address, ep *endpoint) {
	if ep.Data.done == nil {
		d := &ep.Data
		d.sc = ep.SubConn
		d.done = func(lb.DoneInfo) { d.release() }
	}
}

// release counts one request of the endpoint down, never below zero: a
// Done called twice (a caller's bug) cannot leave the count negative,
// which would make the endpoint look lighter than an idle one for good. A
// second Done while other requests are in flight counts one of theirs down
// early; the count is right again once the endpoint drains. docs/choices.md
// says why Done is not guarded per pick.
//
// The common case costs what a plain decrement does (one atomic add); a
// decrement that went below zero is undone by a second add. Between the
// two a Pick may read -1, and what it adds is kept when the add undoes the
// stray decrement: every count stays that of the requests in flight, less
// the stray Dones that found it above zero.
func (d *endpointData) release() {
	if d.active.Add(-1) < 0 {
		d.active.Add(1)
	}
}

// buildPicker returns a picker over ready with the config's choice count
// and a seed drawn from the tree's random source.
func (b *balancer) buildPicker(ready []*endpoint) (lb.Picker, error) {
	b.SlowStart().RecordPicker(ready) // lbkit.lb.endpoints_in_slow_start
	entries := make([]*endpointData, len(ready))
	for i, ep := range ready {
		entries[i] = &ep.Data
	}
	p := newPicker(entries, b.cfg.effective(), b.rand.Uint64())
	if slow := b.SlowStart(); slow.Ramping() {
		res := slow.Resolution(1)
		p.weights = make([]uint64, len(ready))
		f := make([]float64, len(ready))
		for i, ep := range ready {
			p.weights[i] = uint64(slow.Weight(ep, 1, res))
			f[i] = float64(p.weights[i])
		}
		draw := slowstart.NewSampler(f)
		p.draw = &draw
	}
	return p, nil
}

// Describe returns the node with each endpoint's requests in flight.
func (b *balancer) Describe() lb.Node {
	return b.List.Describe(Name, func(ep *endpoint, e *lb.Endpoint) { e.InFlight = ep.Data.active.Load() })
}
