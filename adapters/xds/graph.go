package xds

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/lbkit/lbkit/lb/clusterimpl"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/dns"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// clusterGraph follows the clusters under a root cluster that is not an
// EDS cluster (gRFC A37): an aggregate cluster, whose graph it walks
// ([walkGraph]) with a CDS watch on every cluster reached, or a
// LOGICAL_DNS cluster. It follows each leaf's endpoints (an EDS watch, or
// a DNS resolver) and builds, through its clusterFollower, one priority
// tree of all the leaves' priorities in order ([eds.Concat]). The
// follower keeps the root's CDS watch and hands each of its values to
// setRoot.
// Everything but the DNS resolvers' own goroutines runs on the client's
// serializer.
type clusterGraph struct {
	f    *clusterFollower
	root *ClusterConfig
	// nodes are the clusters reached other than the root, each watched.
	nodes map[string]*graphNode
	// leaves are the leaf clusters of the last complete walk, in order.
	leaves []*graphLeaf
	// counters holds each leaf's shared counter, remade with the leaves.
	counters *clusterimpl.Counters
	// problem is why the graph is not published (Describe shows it).
	problem error
	// closing counts DNS resolvers being closed off the serializer.
	closing *sync.WaitGroup
}

// graphNode is one watched cluster of the graph.
type graphNode struct {
	sub   *subscription
	state clusterState
	cfg   *ClusterConfig
}

// graphLeaf is one leaf cluster and its endpoints.
type graphLeaf struct {
	name string
	kind ClusterKind
	// target is the EDS resource or the DNS host:port followed.
	target  string
	edsSub  *subscription
	dns     resolver.Resolver
	stopped bool
	namer   eds.Namer
	// reported is set once the leaf has endpoints to give (possibly none,
	// after an error or a missing resource: gRFC A37).
	reported bool
	cla      *eds.ClusterLoadAssignment
	err      error
	// counter is the cluster's shared counter of requests in flight,
	// referenced while the leaf lives.
	counter *clusterimpl.Counter
}

// pickFirstLeaf is the endpoint policy of a LOGICAL_DNS cluster's
// priority (gRFC A37).
var pickFirstLeaf = json.RawMessage(`[{"` + pickfirst.Name + `":{}}]`)

func newClusterGraph(f *clusterFollower) *clusterGraph {
	return &clusterGraph{f: f, nodes: make(map[string]*graphNode), closing: &f.env.dnsClosing}
}

// followGraph hands a root cluster that is not an EDS cluster to the
// follower's graph, making it, and reports true; for an EDS root it ends
// the graph, if any, and reports false. It runs inside the serializer.
func (f *clusterFollower) followGraph(cfg *ClusterConfig) bool {
	if cfg.Kind == ClusterEDS {
		f.endGraph()
		return false
	}
	if f.graph == nil {
		f.graph = newClusterGraph(f)
	}
	f.graph.setRoot(cfg)
	return true
}

// endGraph ends the follower's graph, if any.
func (f *clusterFollower) endGraph() {
	if f.graph != nil {
		f.graph.close()
		f.graph = nil
	}
}

// setRoot takes the root cluster's new value.
func (g *clusterGraph) setRoot(cfg *ClusterConfig) {
	g.root = cfg
	g.update()
}

// lookup gives walkGraph what is known of a cluster.
func (g *clusterGraph) lookup(name string) (clusterState, *ClusterConfig) {
	if name == g.f.cluster {
		return clusterKnown, g.root
	}
	n := g.nodes[name]
	if n == nil {
		return clusterPending, nil
	}
	return n.state, n.cfg
}

// update walks the graph again after a change of a cluster: it watches
// the clusters reached (and only those) and, when every one is known,
// follows the leaves and publishes.
func (g *clusterGraph) update() {
	w := walkGraph(g.f.cluster, g.lookup)
	g.watchClusters(w.Reached)
	switch {
	case len(w.Missing) > 0 && w.Err != nil:
		// gRFC A37: a cluster that does not exist fails the channel.
		g.problem = w.Err
		g.f.buildEmpty(w.Err)
	case w.Err != nil:
		g.problem = w.Err
		g.f.hooks.clusterFailed(g.f, w.Err)
	case len(w.Pending) > 0:
		// gRFC A37: nothing is published until every cluster is known.
	default:
		g.problem = nil
		g.followLeaves(w.Leaves)
		g.publish()
	}
}

// watchClusters watches each cluster of reached but the root, and stops
// watching the others.
func (g *clusterGraph) watchClusters(reached []string) {
	for _, name := range reached {
		if name == g.f.cluster || g.nodes[name] != nil {
			continue
		}
		n := &graphNode{}
		g.nodes[name] = n
		n.sub = g.f.c.watch(ClusterType, name, nodeWatcher{g, name, n}, g.f.metrics)
	}
	for name, n := range g.nodes {
		if !slices.Contains(reached, name) {
			n.sub.cancel()
			delete(g.nodes, name)
		}
	}
}

// config returns a cluster's last known value, or nil.
func (g *clusterGraph) config(name string) *ClusterConfig {
	_, cfg := g.lookup(name)
	return cfg
}

// followLeaves makes the leaves those named, in order, each following
// its endpoints; a leaf kept with the same discovery keeps its state.
func (g *clusterGraph) followLeaves(names []string) {
	old := make(map[string]*graphLeaf, len(g.leaves))
	for _, l := range g.leaves {
		old[l.name] = l
	}
	leaves := make([]*graphLeaf, 0, len(names))
	for _, name := range names {
		cfg := g.config(name)
		kind, target := cfg.Kind, cfg.EDSServiceName
		if kind == ClusterLogicalDNS {
			target = cfg.DNSHostPort
		}
		if l := old[name]; l != nil && l.kind == kind && l.target == target {
			delete(old, name)
			leaves = append(leaves, l)
			continue
		}
		l := &graphLeaf{name: name, kind: kind, target: target}
		if prev := old[name]; prev != nil {
			delete(old, name)
			g.stop(prev, false)
			l.counter = prev.counter
		} else {
			l.counter = acquireCounter(name)
		}
		g.start(l)
		leaves = append(leaves, l)
	}
	for _, l := range old {
		g.stop(l, true)
	}
	changed := len(leaves) != len(g.leaves) || g.counters == nil
	for i := range leaves {
		changed = changed || leaves[i].name != g.leaves[i].name
	}
	g.leaves = leaves
	if changed {
		byCluster := make(map[string]*clusterimpl.Counter, len(leaves))
		for _, l := range leaves {
			byCluster[l.name] = l.counter
		}
		g.counters = clusterimpl.NewCounters(byCluster)
		g.f.logger.Info("xds: following the clusters of an aggregate cluster", "clusters", names)
	}
}

// start follows l's endpoints.
func (g *clusterGraph) start(l *graphLeaf) {
	if l.kind == ClusterEDS {
		l.edsSub = g.f.c.watch(EndpointType, l.target, leafWatcher{g, l}, g.f.metrics)
		return
	}
	opts := resolver.BuildOptions{
		Clock:  g.f.c.cfg.clock,
		Logger: g.f.logger.With("dns_cluster", l.name),
		Rand:   rand.New(rand.NewPCG(g.f.env.rand.Uint64(), g.f.env.rand.Uint64())),
	}
	res, err := g.f.env.dns.Build(resolver.Target{Scheme: dns.Scheme, Endpoint: l.target}, dnsConn{g, l}, opts)
	if err != nil {
		// ParseCluster validated the target; should it still be refused,
		// the leaf has no endpoints and says why.
		l.reported, l.err = true, fmt.Errorf("xds: cluster %q: resolving %s: %w", l.name, l.target, err)
		return
	}
	l.dns = res
}

// stop ends l's discovery; release drops its counter too.
func (g *clusterGraph) stop(l *graphLeaf, release bool) {
	l.stopped = true
	if l.edsSub != nil {
		l.edsSub.cancel()
	}
	if l.dns != nil {
		// Closed off the serializer: a lookup may take time to end. Its
		// callbacks find the leaf stopped.
		g.closing.Add(1)
		go func(res resolver.Resolver) {
			defer g.closing.Done()
			res.Close()
		}(l.dns)
	}
	if release {
		releaseCounter(l.name)
	}
}

// close stops every watch and resolver; it runs inside the serializer.
// wait, called after it outside the serializer, waits for the DNS
// resolvers to be closed.
func (g *clusterGraph) close() {
	for name, n := range g.nodes {
		n.sub.cancel()
		delete(g.nodes, name)
	}
	for _, l := range g.leaves {
		g.stop(l, true)
	}
	g.leaves = nil
}

// resolveNow asks every DNS leaf to resolve again (gRFC A37: each
// re-resolution request resolves the LOGICAL_DNS clusters).
func (g *clusterGraph) resolveNow() {
	for _, l := range g.leaves {
		if l.dns != nil {
			l.dns.ResolveNow()
		}
	}
}

// publish publishes the tree of the leaves once each has reported.
func (g *clusterGraph) publish() {
	if len(g.leaves) == 0 {
		return
	}
	parts := make([]eds.Part, 0, len(g.leaves))
	for _, l := range g.leaves {
		if !l.reported {
			return
		}
		cfg := g.config(l.name)
		p := eds.Part{Cluster: l.name, Namer: &l.namer, Assignment: l.cla, IgnoreReresolution: l.kind == ClusterEDS}
		// The locality and endpoint policies are the root's (gRFC A37);
		// the circuit breaker and outlier detection each leaf's own.
		p.Policies = eds.Policies{Endpoint: g.root.Policies.Endpoint, Flat: g.root.Policies.Flat,
			OutlierDetection: cfg.Policies.OutlierDetection, MaxConcurrentRequests: cfg.Policies.MaxConcurrentRequests}
		if l.kind == ClusterLogicalDNS {
			p.Policies.Endpoint, p.Policies.Flat = pickFirstLeaf, true
		}
		parts = append(parts, p)
	}
	conv, err := eds.Concat(parts)
	if conv.State.Degraded != nil {
		var why []string
		for _, l := range g.leaves {
			if l.err != nil {
				why = append(why, l.err.Error())
			}
		}
		if len(why) > 0 {
			conv.State.Degraded = fmt.Errorf("%w (%s)", conv.State.Degraded, strings.Join(why, "; "))
		}
	}
	conv.State.Attributes = clusterimpl.WithCounters(conv.State.Attributes, g.counters)
	g.f.buildConversion(conv, err)
}

// facts describes the graph for Describe; it runs inside the serializer.
func (g *clusterGraph) facts() []resolver.Fact {
	var leaves []string
	for _, l := range g.leaves {
		s := l.name + " (" + l.kind.String() + " " + l.target
		switch {
		case !l.reported:
			s += ", waiting"
		case l.cla == nil || len(l.cla.Endpoints) == 0:
			s += ", no endpoints"
		}
		leaves = append(leaves, s+")")
	}
	facts := []resolver.Fact{{Name: "cluster kind", Value: g.root.Kind.String()}}
	if len(leaves) > 0 {
		facts = append(facts, resolver.Fact{Name: "leaf clusters", Value: strings.Join(leaves, ", ")})
	}
	return facts
}

// nodeWatcher receives the CDS resource of a cluster of the graph.
type nodeWatcher struct {
	g    *clusterGraph
	name string
	n    *graphNode
}

func (w nodeWatcher) update(v any) {
	defer w.g.f.hooks.clusterSeen(w.g.f)
	cfg := v.(ClusterConfig)
	if len(cfg.Ignored) > 0 && (w.n.cfg == nil || !slices.Equal(w.n.cfg.Ignored, cfg.Ignored)) {
		w.g.f.logger.Warn("xds: the cluster sets fields lbkit ignores", "resource", w.name, "fields", cfg.Ignored)
	}
	w.n.state, w.n.cfg = clusterKnown, &cfg
	w.g.update()
}

func (w nodeWatcher) failed(err error) {
	f := w.g.f
	defer f.hooks.clusterSeen(f)
	err = fmt.Errorf("xds: cluster %q of the aggregate cluster %q: %w", w.name, f.cluster, err)
	if w.n.cfg == nil {
		// The graph cannot be walked past this cluster: the error is
		// the graph's until the cluster is known, so that an owner
		// waiting for a tree (a listener's routes) gets one that fails.
		w.g.problem = err
	}
	// gRFC A37: an error before the first config fails the channel (the
	// owner reports it when it has published nothing).
	f.hooks.clusterFailed(f, err)
}

func (w nodeWatcher) missing() {
	defer w.g.f.hooks.clusterSeen(w.g.f)
	w.n.state, w.n.cfg = clusterMissing, nil
	w.g.update()
}

// leafWatcher receives an EDS leaf's assignment.
type leafWatcher struct {
	g *clusterGraph
	l *graphLeaf
}

func (w leafWatcher) update(v any) {
	defer w.g.f.hooks.clusterSeen(w.g.f)
	w.l.reported, w.l.cla, w.l.err = true, v.(eds.Valid).Assignment(), nil
	w.g.publish()
}

func (w leafWatcher) failed(err error) {
	defer w.g.f.hooks.clusterSeen(w.g.f)
	err = fmt.Errorf("xds: cluster %q: its endpoints (EDS resource %q): %w", w.l.name, w.l.target, err)
	w.g.leafFailed(w.l, err)
}

func (w leafWatcher) missing() {
	defer w.g.f.hooks.clusterSeen(w.g.f)
	// gRFC A37: a missing assignment leaves the cluster without
	// endpoints, whether or not it had some.
	w.l.reported, w.l.cla = true, nil
	w.l.err = fmt.Errorf("xds: cluster %q: its endpoints (EDS resource %q) do not exist on the management server %s", w.l.name, w.l.target, w.g.f.c.serverURI())
	w.g.publish()
}

// leafFailed records a leaf's error: a leaf that never reported reports
// no endpoints (gRFC A37); one that did keeps them.
func (g *clusterGraph) leafFailed(l *graphLeaf, err error) {
	if l.reported {
		g.f.logger.Warn("xds: keeping the last good state", "error", err)
		return
	}
	l.reported, l.cla, l.err = true, nil, err
	g.publish()
}

// dnsConn receives a LOGICAL_DNS leaf's resolutions on the DNS
// resolver's goroutine and hands them to the serializer.
type dnsConn struct {
	g *clusterGraph
	l *graphLeaf
}

// UpdateState takes a resolution: the addresses become the leaf's one
// locality.
func (d dnsConn) UpdateState(st resolver.State) error {
	addrs := slices.Clone(st.Addresses)
	if !d.g.f.c.ser.Schedule(func() {
		if d.l.stopped {
			return
		}
		defer d.g.f.hooks.clusterSeen(d.g.f)
		d.l.reported, d.l.cla, d.l.err = true, eds.Resolved(d.l.name, addrs), nil
		d.g.publish()
	}) {
		return errors.New("xds: the resolver is closed")
	}
	return nil
}

// ReportError takes a failed resolution.
func (d dnsConn) ReportError(err error) {
	d.g.f.c.ser.Schedule(func() {
		if d.l.stopped {
			return
		}
		defer d.g.f.hooks.clusterSeen(d.g.f)
		d.g.leafFailed(d.l, fmt.Errorf("xds: cluster %q: resolving %s: %w", d.l.name, d.l.target, err))
	})
}
