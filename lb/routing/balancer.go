package routing

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
	"github.com/lbkit/lbkit/lb/route"
)

// clusterData is what the policy keeps per cluster child.
type clusterData struct {
	// slot is the cluster's index in a picker's pickers: stable for the
	// child's lifetime, reused after it.
	slot int
}

type child = childmanager.Child[clusterData]

// balancer is the xds_routing_experimental policy. Every method, child
// hook and scheduled callback runs inside the tree's serialized calls, so
// nothing is locked; the updating flag keeps children's reports during a
// parent call from publishing before the call's end, which publishes once.
type balancer struct {
	cc     lb.ClientConn
	opts   lb.BuildOptions
	logger *slog.Logger

	children *childmanager.Manager[clusterData]
	config   *Config
	// actions are the latest config's routes' actions, by route index.
	actions []action
	// scheds holds the EDF schedulers of the latest actions by their key,
	// so that an update keeping a split keeps its schedule.
	scheds map[string]*splitSched
	// rnd draws the routes' runtime fractions and the random hashes of
	// requests whose hash policies give none; it lives as long as the
	// balancer.
	rnd *source
	// channelID is the hash of the io.grpc.channel_id hash policy (gRFC
	// A42): random, drawn at build, the same for every request.
	channelID uint64
	// stats count the requests each route of config matched.
	stats matchStats

	updating bool
	slots    childmanager.Slots
}

// Build returns a new routing balancer reporting to cc; its children share
// opts, whose defaults the caller applied ([lb.BuildOptions.WithDefaults]).
func (policy) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &balancer{cc: cc, opts: opts, logger: opts.PolicyLogger(Name), rnd: newSource(opts.Rand.Uint64()),
		stats: matchStats{last: new(atomic.Pointer[routeCounter])}}
	b.channelID = opts.Rand.Uint64()
	b.children = childmanager.New(cc, opts, childmanager.Hooks[clusterData]{
		StateChanged: b.childStateChanged,
		Removed:      func(c *child) { b.slots.Free(c.Data.slot) },
	})
	return b
}

// UpdateClientConnState applies a config: clusters it no longer names are
// removed at once, every other cluster is created if new and sent its
// policy and the addresses whose hierarchical path starts with its name,
// the routes' actions are rebuilt, and the policy publishes once. The
// children's errors are returned joined, each naming its cluster.
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*Config)
	if !ok || cfg == nil {
		return fmt.Errorf("routing: got config %T, want a non-nil *routing.Config", s.BalancerConfig)
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	groups := childmanager.GroupAddresses(b.logger, "routing", s.ResolverState.Addresses, func(name string) bool {
		_, ok := cfg.Clusters[name]
		return ok
	})
	var prev *route.Table
	if b.config != nil {
		prev = b.config.Routes
	}
	b.stats.routes = b.stats.rebuild(prev, cfg.Routes)
	b.config = cfg
	b.updating = true
	err := childmanager.Sync(b.children, b.logger, "routing", "cluster", cfg.Clusters, b.addChild,
		func(c *child, p *lb.ParsedPolicy) error {
			return c.Update(p, childmanager.ChildState(groups, c.Name(), s.ResolverState))
		})
	b.updating = false
	err = errors.Join(err, b.buildActions())
	b.publish()
	return err
}

func (b *balancer) addChild(name string) *child {
	c := b.children.Add(name)
	c.Data = clusterData{slot: b.slots.Take()}
	b.logger.Debug("routing: adding cluster", "child_name", name)
	return c
}

// ResolverError passes err to every cluster; with none, the policy fails
// every request with err.
func (b *balancer) ResolverError(err error) {
	if b.children.Len() == 0 {
		b.cc.UpdateState(lb.State{
			ConnectivityState: lb.TransientFailure,
			Picker:            lb.NewErrPicker(lb.TransientFailureError(fmt.Errorf("routing: resolver error: %w", err))),
		})
		return
	}
	b.updating = true
	b.children.ResolverError(err)
	b.updating = false
	b.publish()
}

// ExitIdle passes the request to every cluster.
func (b *balancer) ExitIdle() {
	b.updating = true
	b.children.ExitIdle()
	b.updating = false
	b.publish()
}

// Close removes every cluster; their SubConns shut down.
func (b *balancer) Close() { b.children.Close() }

// childStateChanged publishes the cluster's new picker, unless a parent
// call is in progress (which publishes at its end).
func (b *balancer) childStateChanged(c *child) {
	if !b.updating {
		b.publish()
	}
}

// publish sends the aggregate state of the clusters (lb.StateCounter's)
// with a routing picker over the clusters' current pickers. The picker is
// the same whatever the state: a request goes to the cluster its route
// names, whose own picker queues, fails or picks (gRFC A28).
func (b *balancer) publish() {
	if b.config == nil {
		return
	}
	var counter lb.StateCounter
	pickers := make([]lb.Picker, b.slots.Len())
	for _, c := range b.children.Children() {
		s := c.State()
		counter.Add(s.ConnectivityState)
		pickers[c.Data.slot] = s.Picker
	}
	b.cc.UpdateState(lb.State{
		ConnectivityState: counter.Aggregate(),
		Picker:            &picker{routes: b.config.Routes, actions: b.actions, pickers: pickers, rnd: b.rnd, channelID: b.channelID, stats: b.stats},
	})
}

// Describe returns the routing node with its routes, the requests each
// matched and the route that matched the latest request, and its
// clusters, in name order.
func (b *balancer) Describe() lb.Node {
	n := lb.Node{Policy: Name}
	if b.config != nil {
		n.Routes = b.stats.describe(b.config.Routes)
	}
	for _, c := range b.children.Children() {
		n.Children = append(n.Children, c.Describe())
	}
	return n
}
