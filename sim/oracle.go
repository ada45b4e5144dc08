package sim

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
	"github.com/lbkit/lbkit/lb/resolver"

	// The policies a scenario names are lbkit's own, from the registry.
	_ "github.com/lbkit/lbkit/lb/policies"
)

// OracleName is the name under which the simulator registers its oracle
// policy: a yardstick, not a policy to deploy. At each pick it asks the
// simulator ([Oracle], found in the pick's context) for every READY
// endpoint's expected latency — the backend's true mean service time under
// the faults active now, times the queueing its current load implies — and
// picks the least; among equals it takes them in turn, as round_robin
// would. It does not
// know the service time the next request will draw. Outside the simulator
// (no Oracle in the context) it picks the first READY endpoint.
const OracleName = "sim_oracle"

func init() { lb.Register(oracleBuilder{}) }

// oracleBuilder builds oracle balancers; it takes no config.
type oracleBuilder struct{}

func (oracleBuilder) Name() string { return OracleName }

func (oracleBuilder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &oracleBalancer{}
	b.List = endpointlist.New(cc, opts, opts.PolicyLogger(OracleName), endpointlist.Policy[string]{
		Name:        OracleName,
		BuildPicker: buildOraclePicker,
	})
	return b
}

// oracleBalancer keeps one SubConn per endpoint (lb/endpointlist) and
// remembers each endpoint's address for its picker.
type oracleBalancer struct {
	*endpointlist.List[string]
}

func (b *oracleBalancer) UpdateClientConnState(s lb.ClientConnState) error {
	return b.Update(s.ResolverState, func(a resolver.Address, ep *endpointlist.Endpoint[string]) {
		ep.Data = a.Addr
	})
}

func buildOraclePicker(ready []*endpointlist.Endpoint[string]) (lb.Picker, error) {
	p := &oraclePicker{}
	for _, ep := range ready {
		p.addrs = append(p.addrs, ep.Data)
		p.results = append(p.results, lb.PickResult{SubConn: ep.SubConn})
	}
	return p, nil
}

// oraclePicker picks the READY endpoint the simulator expects fastest.
type oraclePicker struct {
	addrs   []string
	results []lb.PickResult
	next    atomic.Uint64 // counts picks: equals are taken in turn
}

func (p *oraclePicker) Pick(info lb.PickInfo) (lb.PickResult, error) {
	o, _ := info.Ctx.Value(oracleKey{}).(Oracle)
	if o == nil {
		return p.results[0], nil
	}
	// Two passes over the estimates, which do not change during a pick:
	// the least and how many share it, then the one whose turn it is.
	ties, least := 0, time.Duration(0)
	for _, a := range p.addrs {
		if est, ok := o.Estimate(a); ok && (ties == 0 || est < least) {
			ties, least = 1, est
		} else if ok && est == least {
			ties++
		}
	}
	if ties == 0 {
		return lb.PickResult{}, lb.TransientFailureError(errNoOracleBackend)
	}
	k := p.next.Add(1) % uint64(ties)
	for i, a := range p.addrs {
		if est, ok := o.Estimate(a); ok && est == least {
			if k == 0 {
				return p.results[i], nil
			}
			k--
		}
	}
	return p.results[0], nil // not reached: the second pass sees the first's ties
}

var errNoOracleBackend = errors.New("sim_oracle: every READY backend is stopped")
