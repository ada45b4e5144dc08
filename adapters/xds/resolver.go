package xds

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/dns"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"google.golang.org/protobuf/proto"
)

// clusterResource reads CDS Clusters with [ParseCluster].
var clusterResource = &resourceType{url: ClusterType, kind: "cluster", wholeSet: true, decode: decodeCluster}

func decodeCluster(raw []byte) (string, any, error) {
	var c clusterv3.Cluster
	if err := proto.Unmarshal(raw, &c); err != nil {
		return "", nil, fmt.Errorf("not an envoy.config.cluster.v3.Cluster: %w", err)
	}
	if c.GetName() == "" {
		return "", nil, errors.New("name: required")
	}
	cfg, err := ParseCluster(&c)
	return c.GetName(), cfg, err
}

// endpointResource reads EDS ClusterLoadAssignments into the eds
// package's model, so that an assignment means the same over xDS as in a
// file: [convertAssignment] converts the message directly and refuses what
// [eds.Parse] refuses, and both end in [eds.ClusterLoadAssignment.Validate]
// ([eds.Check]). The common form is read from the wire without protobuf's
// messages ([readAssignment]), to the same result. The value is an
// [eds.Valid], which the resolver converts without checking it again.
var endpointResource = &resourceType{url: EndpointType, kind: "endpoints", decode: decodeEndpoints}

func decodeEndpoints(raw []byte) (string, any, error) {
	if cla, ok := readAssignment(raw); ok {
		v, err := eds.Check(cla)
		if err != nil {
			return cla.ClusterName, nil, err // "eds: ..."
		}
		return cla.ClusterName, v, nil
	}
	var m endpointv3.ClusterLoadAssignment
	if err := proto.Unmarshal(raw, &m); err != nil {
		return "", nil, fmt.Errorf("not an envoy.config.endpoint.v3.ClusterLoadAssignment: %w", err)
	}
	v, err := convertAssignment(&m)
	if err != nil {
		return m.GetClusterName(), nil, err // "eds: ..."
	}
	return m.GetClusterName(), v, nil
}

// followerEnv is what the clusterFollowers of one resolver share.
type followerEnv struct {
	c       *client
	metrics *resolverMetrics // nil without [WithMetrics]
	// dns builds the DNS resolvers of LOGICAL_DNS clusters.
	dns *dns.Builder
	// rand seeds the DNS resolvers; owned by c's serializer.
	rand *rand.Rand
	// dnsClosing counts the graphs' DNS resolvers being closed; the
	// resolver's Close waits for them.
	dnsClosing sync.WaitGroup
}

// follower returns a clusterFollower of cluster telling hooks.
func (e *followerEnv) follower(cluster string, logger *slog.Logger, hooks clusterHooks) *clusterFollower {
	return &clusterFollower{env: e, c: e.c, cluster: cluster, logger: logger, metrics: e.metrics, hooks: hooks}
}

// clusterFollower follows one cluster, the unit a resolver is made of:
// its CDS resource says which EDS resource to follow and with which
// policies, and each valid pair is converted into the eds package's tree
// (tree). An aggregate or LOGICAL_DNS cluster is handed to a clusterGraph
// instead (graph.go), which builds the tree of its leaves. It tells its
// owner through hooks; every field and call is owned by its client's
// serializer, where its watchers' callbacks run.
type clusterFollower struct {
	env     *followerEnv
	c       *client
	cluster string
	logger  *slog.Logger
	metrics *resolverMetrics // nil without [WithMetrics]
	hooks   clusterHooks

	// graph follows an aggregate or LOGICAL_DNS cluster; nil for an EDS
	// cluster.
	graph    *clusterGraph
	cdsWatch *subscription
	edsWatch *subscription
	edsName  string
	cfg      *ClusterConfig
	cla      eds.Valid
	namer    eds.Namer
	// tree is the cluster's tree built last: from a valid cluster and
	// assignment, or empty with its Degraded reason when the cluster or
	// its endpoints do not exist. Nil until the first.
	tree *resolver.State
	// The problems that still stand, for Describe: the cluster's and the
	// endpoints' (refused, missing, stream lost; cleared by their next
	// valid value) and the tree's (it cannot be built, or is empty;
	// cleared when a tree with addresses is built).
	cdsErr, edsErr, treeErr error
}

// clusterHooks is what a clusterFollower tells its owner, inside the
// serializer.
type clusterHooks interface {
	// treeChanged says that f.tree is new (it may be empty, with a
	// Degraded reason); conv is the conversion it came from (nil for an
	// empty tree).
	treeChanged(f *clusterFollower, conv *eds.Conversion)
	// clusterFailed reports an error that leaves f.tree (nil when there
	// is none yet) in use.
	clusterFailed(f *clusterFollower, err error)
	// clusterSeen ends every callback of f's watchers, after the hooks
	// above: what Describe shows of f may have changed.
	clusterSeen(f *clusterFollower)
}

// start subscribes to the cluster. It runs inside the serializer.
func (f *clusterFollower) start() {
	f.cdsWatch = f.c.watch(ClusterType, f.cluster, clusterWatcher{f}, f.metrics)
}

// stop ends the subscriptions; no hook is called after it. It runs inside
// the serializer.
func (f *clusterFollower) stop() {
	f.cdsWatch.cancel()
	f.endGraph()
	if f.edsWatch != nil {
		f.edsWatch.cancel()
	}
}

// problems returns the problems that still stand, for Describe.
func (f *clusterFollower) problems() []error {
	if f.graph != nil {
		return []error{f.cdsErr, f.edsErr, f.treeErr, f.graph.problem}
	}
	return []error{f.cdsErr, f.edsErr, f.treeErr}
}

// graphFacts describes the aggregate or LOGICAL_DNS graph, if any.
func (f *clusterFollower) graphFacts() []resolver.Fact {
	if f.graph == nil {
		return nil
	}
	return f.graph.facts()
}

// resolveNow resolves the LOGICAL_DNS clusters of the graph again, if
// any. It runs inside the serializer.
func (f *clusterFollower) resolveNow() {
	if f.graph != nil {
		f.graph.resolveNow()
	}
}

// clusterWatcher receives the cluster's CDS resource.
type clusterWatcher struct{ f *clusterFollower }

func (w clusterWatcher) update(v any) {
	f := w.f
	defer f.hooks.clusterSeen(f)
	cfg := v.(ClusterConfig)
	if len(cfg.Ignored) > 0 && (f.cfg == nil || !slices.Equal(f.cfg.Ignored, cfg.Ignored)) {
		f.logger.Warn("xds: the cluster sets fields lbkit ignores", "fields", cfg.Ignored)
	}
	f.cfg, f.cdsErr = &cfg, nil
	if cfg.EDSServiceName != f.edsName {
		f.followEndpoints(cfg.EDSServiceName)
	}
	if f.followGraph(&cfg) { // aggregate and LOGICAL_DNS clusters (graph.go)
		return
	}
	f.build()
}

func (w clusterWatcher) failed(err error) { w.f.failed(&w.f.cdsErr, err) }

func (w clusterWatcher) missing() {
	f := w.f
	defer f.hooks.clusterSeen(f)
	f.cfg = nil
	f.endGraph()
	f.followEndpoints("")
	f.cdsErr = fmt.Errorf("xds: cluster %q does not exist on the management server %s", f.cluster, f.c.serverURI())
	f.buildEmpty(f.cdsErr)
}

// endpointWatcher receives the cluster's EDS resource.
type endpointWatcher struct{ f *clusterFollower }

func (w endpointWatcher) update(v any) {
	f := w.f
	defer f.hooks.clusterSeen(f)
	f.cla, f.edsErr = v.(eds.Valid), nil
	f.build()
}

func (w endpointWatcher) failed(err error) { w.f.failed(&w.f.edsErr, err) }

func (w endpointWatcher) missing() {
	f := w.f
	defer f.hooks.clusterSeen(f)
	f.cla = eds.Valid{}
	f.edsErr = fmt.Errorf("xds: cluster %q: its endpoints (EDS resource %q) do not exist on the management server %s", f.cluster, f.edsName, f.c.serverURI())
	f.buildEmpty(f.edsErr)
}

// followEndpoints switches the EDS subscription to name ("" for none).
func (f *clusterFollower) followEndpoints(name string) {
	f.edsName, f.cla, f.namer = name, eds.Valid{}, eds.Namer{}
	f.edsWatch = f.c.rewatch(f.edsWatch, EndpointType, name, endpointWatcher{f}, f.metrics)
}

// failed records err and tells the owner, whose last good state stays in
// use (gRFC A57).
func (f *clusterFollower) failed(on *error, err error) {
	defer f.hooks.clusterSeen(f)
	*on = err
	f.hooks.clusterFailed(f, err)
}

// build converts the current cluster and assignment into the tree, when
// both are known, and tells the owner.
func (f *clusterFollower) build() {
	if f.cfg == nil || f.cla.Assignment() == nil {
		return
	}
	conv, err := f.namer.ConvertValid(f.cla, f.cfg.Policies)
	f.buildConversion(conv, err)
}

// buildConversion makes conv's state the tree, its reason prefixed with
// the cluster, and tells the owner; err is the conversion's error, which
// leaves the last tree in use.
func (f *clusterFollower) buildConversion(conv eds.Conversion, err error) {
	if err != nil {
		f.treeErr = fmt.Errorf("xds: cluster %q: %w", f.cluster, err)
		f.hooks.clusterFailed(f, f.treeErr)
		return
	}
	if conv.State.Degraded != nil {
		conv.State.Degraded = fmt.Errorf("xds: cluster %q: %w", f.cluster, conv.State.Degraded)
	}
	f.treeErr = nil
	f.tree = &conv.State
	f.hooks.treeChanged(f, &conv)
}

// buildEmpty makes the tree one without endpoints whose reason
// (resolver.State.Degraded) is err, so that picks fail with err from the
// first picker of that tree, and tells the owner.
func (f *clusterFollower) buildEmpty(err error) {
	f.logger.Warn("xds: no endpoints to serve", "error", err)
	st := emptyTree(f.cluster, err)
	f.tree = &st
	f.hooks.treeChanged(f, nil)
}

// emptyTree returns the tree of a cluster without endpoints, whose
// Degraded reason is err.
func emptyTree(cluster string, err error) resolver.State {
	var n eds.Namer
	conv, cerr := n.Convert(&eds.ClusterLoadAssignment{ClusterName: cluster}, eds.Policies{})
	if cerr != nil {
		// An empty assignment always converts; should it not, the
		// state still says why there is nothing to serve.
		return resolver.State{Degraded: fmt.Errorf("%w (and its empty tree: %w)", err, cerr)}
	}
	conv.State.Degraded = err
	return conv.State
}
