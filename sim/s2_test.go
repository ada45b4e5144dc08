package sim

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
	"github.com/lbkit/lbkit/lb/resolver"
)

// distinctP2C is a test policy: power of two choices over two distinct
// endpoints, as tower's P2C draws them (gRFC A48's least_request draws
// with replacement). It exists to test docs/simulation.md's explanation of
// S2.
type distinctP2C struct{}

func (distinctP2C) Name() string { return "test_distinct_p2c" }

type counter struct{ active *atomic.Int64 }

func (distinctP2C) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &distinctBalancer{rand: opts.Rand}
	b.List = endpointlist.New(cc, opts, opts.PolicyLogger("test_distinct_p2c"), endpointlist.Policy[counter]{
		Name: "test_distinct_p2c", BuildPicker: b.buildPicker,
	})
	return b
}

type distinctBalancer struct {
	*endpointlist.List[counter]
	rand *rand.Rand
}

func (b *distinctBalancer) UpdateClientConnState(s lb.ClientConnState) error {
	return b.Update(s.ResolverState, func(_ resolver.Address, ep *endpointlist.Endpoint[counter]) {
		if ep.Data.active == nil {
			ep.Data.active = new(atomic.Int64)
		}
	})
}

func (b *distinctBalancer) buildPicker(ready []*endpointlist.Endpoint[counter]) (lb.Picker, error) {
	p := &distinctPicker{rand: rand.New(rand.NewPCG(b.rand.Uint64(), 1))}
	for _, ep := range ready {
		p.eps = append(p.eps, ep.Data)
		active := ep.Data.active
		p.results = append(p.results, lb.PickResult{SubConn: ep.SubConn, Done: func(lb.DoneInfo) { active.Add(-1) }})
	}
	return p, nil
}

// distinctPicker is for the simulator's one goroutine only (its rand is
// not safe for concurrent use).
type distinctPicker struct {
	rand    *rand.Rand
	eps     []counter
	results []lb.PickResult
}

func (p *distinctPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	n := len(p.eps)
	i := p.rand.IntN(n)
	if n > 1 {
		j := (i + 1 + p.rand.IntN(n-1)) % n
		if p.eps[j].active.Load() < p.eps[i].active.Load() {
			i = j
		}
	}
	p.eps[i].active.Add(1)
	return p.results[i], nil
}

// S2's P2C p99.9 is above tower's published 857 ms because A48 samples
// with replacement (1 pick in 100 must take the 1 s endpoint): the same
// scenario under a P2C of two distinct endpoints sends the slow endpoint
// far fewer requests, and its p99.9 falls well below least_request's.
func TestS2DistinctChoices(t *testing.T) {
	s := loadScenario(t, "s2-tower")
	s.policies = []policySpec{s.policies[1], {name: "distinct P2C", parsed: &lb.ParsedPolicy{Name: "test_distinct_p2c", Builder: distinctP2C{}}}}
	rep, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	a48, distinct := rep.Policies[0], rep.Policies[1]
	for _, p := range rep.Policies {
		t.Logf("%s: p50 %.1f, p90 %.1f, p99 %.1f, p99.9 %.1f ms, %d s; the 1 s endpoint got %d requests", p.Policy, p.Latency.P50, p.Latency.P90, p.Latency.P99, p.Latency.P999, len(p.Series), p.Backends[9].Requests)
	}
	if distinct.Backends[9].Requests >= a48.Backends[9].Requests || distinct.Latency.P999 >= a48.Latency.P999 {
		t.Errorf("distinct choices: p99.9 %.1f ms, %d requests to the slow endpoint; least_request: %.1f ms, %d",
			distinct.Latency.P999, distinct.Backends[9].Requests, a48.Latency.P999, a48.Backends[9].Requests)
	}
}
