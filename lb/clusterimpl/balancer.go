package clusterimpl

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
)

// childName is the name of the policy's one child in its child manager.
const childName = "child"

// balancer is the xds_cluster_impl_experimental policy. Every method and
// child hook runs inside the tree's serialized calls; only the counter,
// which pickers share, is atomic.
type balancer struct {
	cc   lb.ClientConn
	opts lb.BuildOptions

	children *childmanager.Manager[struct{}]
	child    *childmanager.Child[struct{}]

	// cfg is the latest config; nil before the first update.
	cfg *Config
	// counter counts the requests in flight: the balancer's own for its
	// life, or the one the resolver state carries ([WithCounter]).
	counter *Counter
	// drops and overLimit are what pickers apply, made from cfg.
	drops     []dropper
	overLimit *overLimit
	// handles keeps the metric handles by label values, resolved once.
	handles map[handleKey]lb.Counter
	// updating is set while UpdateClientConnState reaches the child,
	// which publishes once at its end.
	updating bool
}

// Build returns a new balancer reporting to cc; its child shares opts.
func (policy) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &balancer{cc: cc, opts: opts, counter: NewCounter(), handles: make(map[handleKey]lb.Counter)}
	b.children = childmanager.New[struct{}](cc, opts, childmanager.Hooks[struct{}]{
		StateChanged: func(*childmanager.Child[struct{}]) {
			if !b.updating {
				b.publish()
			}
		},
	})
	b.child = b.children.Add(childName)
	return b
}

// UpdateClientConnState applies the config, passes the addresses and the
// child policy to the child, and publishes once; the child's error is
// returned.
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*Config)
	if !ok || cfg == nil {
		return fmt.Errorf("clusterimpl: got config %T, want a non-nil *clusterimpl.Config: %w", s.BalancerConfig, lb.ErrBadResolverState)
	}
	b.cfg = cfg
	if c := counterFor(s.ResolverState.Attributes, cfg.Cluster); c != nil {
		b.counter = c
	}
	b.applyConfig()
	b.updating = true
	err := b.child.Update(cfg.ChildPolicy, s.ResolverState)
	b.updating = false
	b.publish()
	return err
}

// applyConfig makes the droppers and the circuit breaker's refusal of
// b.cfg, with their errors and metric handles.
func (b *balancer) applyConfig() {
	cluster := b.cfg.Cluster
	prefix := Name + ": "
	if cluster != "" {
		prefix += "cluster " + strconv.Quote(cluster) + ": "
	}
	b.drops = make([]dropper, len(b.cfg.DropCategories))
	for i, d := range b.cfg.DropCategories {
		b.drops[i] = dropper{
			perMillion: uint64(d.RequestsPerMillion),
			err:        lb.DropError(fmt.Errorf("%srequest dropped by drop category %q (%s of requests; the load assignment's drop_overloads)", prefix, d.Category, share(d.RequestsPerMillion))),
			count:      b.handle(handleKey{MetricDrops, cluster, d.Category}),
		}
	}
	b.overLimit = nil
	if m := b.cfg.MaxConcurrentRequests; m != nil {
		b.overLimit = &overLimit{
			err:   lb.DropError(fmt.Errorf("%s%d requests in flight, the most the cluster allows (circuit_breakers max_requests, gRFC A32): %w", prefix, *m, ErrOverLimit)),
			count: b.handle(handleKey{desc: MetricCircuitBreakerDrops, cluster: cluster}),
		}
	}
}

// ErrOverLimit is wrapped by the error of a pick failed by the circuit
// breaker.
var ErrOverLimit = errors.New("too many requests in flight")

// share writes a share of Million as a percentage, such as "12.5%".
func share(perMillion uint32) string {
	return strconv.FormatFloat(float64(perMillion)/Million*100, 'f', -1, 64) + "%"
}

// handleKey names one metric handle: the metric and its label values
// after the target (category only for [MetricDrops]).
type handleKey struct {
	desc              *lb.MetricDesc
	cluster, category string
}

// handle returns the counter k names, resolved once.
func (b *balancer) handle(k handleKey) lb.Counter {
	c, ok := b.handles[k]
	if !ok {
		labels := []string{b.cc.Target(), k.cluster}
		if k.desc == MetricDrops {
			labels = append(labels, k.category)
		}
		c = b.opts.Metrics.Counter(k.desc, labels...)
		b.handles[k] = c
	}
	return c
}

// publish reports the child's state with a picker applying the config. A
// child's failing or queueing picker that is not READY is published as it
// is: it never returns a SubConn, so there is nothing to count or drop.
func (b *balancer) publish() {
	s := b.child.State()
	if _, failing := s.Picker.(lb.FailingPicker); failing && s.ConnectivityState != lb.Ready {
		b.cc.UpdateState(s)
		return
	}
	p := &picker{
		child:   s.Picker,
		ready:   s.ConnectivityState == lb.Ready,
		counter: b.counter,
		seed:    b.opts.Rand.Uint64(),
	}
	if b.cfg != nil {
		p.drops = b.drops
		if b.overLimit != nil {
			p.limited, p.limit, p.overLimit = true, *b.cfg.MaxConcurrentRequests, b.overLimit
		}
	}
	b.cc.UpdateState(lb.State{ConnectivityState: s.ConnectivityState, Picker: p})
}

// ResolverError passes err to the child.
func (b *balancer) ResolverError(err error) { b.child.ResolverError(err) }

// ExitIdle passes the request to the child.
func (b *balancer) ExitIdle() { b.child.ExitIdle() }

// Close closes the child. Requests in flight still count down when they
// end.
func (b *balancer) Close() { b.children.Close() }

// Describe returns the policy's node over its child's.
func (b *balancer) Describe() lb.Node {
	return lb.Node{Policy: Name, Children: []lb.Node{b.child.Describe()}}
}
