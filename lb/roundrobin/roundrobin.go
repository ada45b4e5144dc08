package roundrobin

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
)

// Name is the policy's name in loadBalancingConfig and in the [lb] registry,
// the name gRPC gives it.
const Name = "round_robin"

func init() { lb.Register(Builder{}) }

// Builder builds round_robin balancers. The policy takes no config: any
// config object is accepted and ignored, as gRPC does. The zero value is
// ready to use; it is what this package registers under [Name].
type Builder struct{}

var _ lb.Builder = Builder{}

// Name returns [Name].
func (Builder) Name() string { return Name }

// Build returns a new round_robin balancer reporting to cc. It ignores
// [lb.ClientConnState.BalancerConfig]. Build publishes nothing; the first
// UpdateClientConnState does.
func (Builder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &balancer{rand: opts.Rand}
	b.List = endpointlist.New(cc, opts.Scheduler, opts.PolicyLogger(Name), endpointlist.Policy[struct{}]{
		Name:                Name,
		BuildPicker:         b.buildPicker,
		ResolveOnDisconnect: true,
	})
	return b
}

// balancer is one round_robin policy instance: an [endpointlist.List]
// whose READY pickers rotate over the READY endpoints. Its fields belong to
// the tree's serializer.
type balancer struct {
	*endpointlist.List[struct{}]
	// rand draws each picker's starting index.
	rand *rand.Rand
}

// UpdateClientConnState takes the parent's addresses; weights and the
// config are ignored. It always publishes a new state and picker.
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	return b.Update(s.ResolverState, nil)
}

// buildPicker returns a picker over ready that starts at an index drawn
// uniformly with the tree's random source.
func (b *balancer) buildPicker(ready []*endpointlist.Endpoint[struct{}]) (lb.Picker, error) {
	p := &picker{results: make([]lb.PickResult, len(ready))}
	for i, ep := range ready {
		p.results[i] = lb.PickResult{SubConn: ep.SubConn}
	}
	p.next.Store(uint64(b.rand.IntN(len(ready))))
	return p, nil
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

// Describe returns the node with every endpoint.
func (b *balancer) Describe() lb.Node { return b.List.Describe(Name, nil) }
