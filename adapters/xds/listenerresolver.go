package xds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb/clusterimpl"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"github.com/lbkit/lbkit/lb/route"
	"github.com/lbkit/lbkit/lb/routing"
)

// listenerResolver follows a listener ("xds:///LISTENER", gRFC A27 and
// A28): its HttpConnectionManager's routes, inline or from an RDS
// resource, and a clusterFollower for every cluster they name; it
// publishes one state whose service config is an xds_routing_experimental
// config (the routes, and each cluster's tree as its child policy) and
// whose addresses are the clusters' under their cluster's name
// (hierarchical paths).
//
// A route table is published once every cluster it names has a tree or
// has failed (its child then gets an empty tree whose reason fails the
// requests routed to it, and only those); until then the state published
// before stays in use. Clusters the published table no longer names are
// unsubscribed after it is published. A listener or route configuration
// that does not exist publishes a state that fails every request.
//
// Its state is owned by its client's serializer, where its watchers'
// callbacks run; Describe reads a copy (view) replaced after each of them.
type listenerResolver struct {
	env      *followerEnv
	c        *client
	key      poolKey
	cc       resolver.ClientConn
	listener string
	logger   *slog.Logger
	metrics  *resolverMetrics // nil without [WithMetrics]

	closeOnce sync.Once
	view      atomic.Pointer[listenerView]

	// Owned by c's serializer.
	ldsWatch, rdsWatch *subscription
	// rdsName is the RDS resource the listener names ("" for routes
	// inline, or no listener).
	rdsName string
	// routes is the route table to serve (nil: none known yet, or none).
	routes   *route.Table
	clusters map[string]*clusterFollower
	// counters are the clusters' process-wide counters of requests in
	// flight (gRFC A32), one reference each while the cluster is
	// followed.
	counters map[string]*clusterimpl.Counter
	// shared is what the published state carries of counters, kept while
	// it holds the same counters (byCluster), so that an update that
	// changes nothing is not published again.
	shared    *clusterimpl.Counters
	byCluster map[string]*clusterimpl.Counter
	// published is the state published last.
	published *resolver.State
	// ldsErr and rdsErr are the listener's and the route
	// configuration's standing problems (refused, missing, stream lost).
	ldsErr, rdsErr error
}

func newListenerResolver(env *followerEnv, key poolKey, cc resolver.ClientConn, listener string, logger *slog.Logger) *listenerResolver {
	return &listenerResolver{env: env, c: env.c, key: key, cc: cc, listener: listener, logger: logger, metrics: env.metrics, clusters: make(map[string]*clusterFollower), counters: make(map[string]*clusterimpl.Counter)}
}

// start subscribes to the listener. It runs inside the serializer.
func (r *listenerResolver) start() {
	r.ldsWatch = r.c.watch(ListenerType, r.listener, listenerWatcher{r}, r.metrics)
	r.saveView()
}

// ResolveNow resolves the LOGICAL_DNS clusters under its clusters again
// (gRFC A37); it does nothing else: the management server pushes every
// change. It never blocks.
func (r *listenerResolver) ResolveNow() {
	r.c.ser.Schedule(func() {
		for _, f := range r.clusters {
			f.resolveNow()
		}
	})
}

// Close ends the subscriptions and releases the shared client; no call
// to the ClientConn happens after it returns. It waits for a callback of
// the client that is running (never for I/O).
func (r *listenerResolver) Close() {
	r.closeOnce.Do(func() {
		r.c.ser.Run(context.Background(), func() {
			r.ldsWatch.cancel()
			r.followRoutes("")
			r.dropClusters(nil)
			if r.metrics != nil {
				r.c.removeStreamMetrics(r.metrics)
			}
		})
		r.env.dnsClosing.Wait()
		release(r.key)
	})
}

// listenerWatcher receives the LDS resource.
type listenerWatcher struct{ r *listenerResolver }

func (w listenerWatcher) update(v any) {
	r := w.r
	defer r.saveView()
	u := v.(*listenerUpdate)
	r.ldsErr = nil
	if u.routes != nil {
		r.followRoutes("")
		r.routes = u.routes
		r.reconcile()
		return
	}
	if u.routeConfigName != r.rdsName {
		// The routes in use stay until the new configuration comes.
		r.routes = nil
		r.followRoutes(u.routeConfigName)
	}
}

func (w listenerWatcher) failed(err error) { w.r.failed(&w.r.ldsErr, err) }

func (w listenerWatcher) missing() {
	r := w.r
	defer r.saveView()
	r.ldsErr = fmt.Errorf("xds: listener %q does not exist on the management server %s", r.listener, r.c.serverURI())
	r.followRoutes("")
	r.unavailable(r.ldsErr)
}

// routeWatcher receives the RDS resource the listener names.
type routeWatcher struct{ r *listenerResolver }

func (w routeWatcher) update(v any) {
	r := w.r
	defer r.saveView()
	r.rdsErr, r.routes = nil, v.(*route.Table)
	r.reconcile()
}

func (w routeWatcher) failed(err error) { w.r.failed(&w.r.rdsErr, err) }

func (w routeWatcher) missing() {
	r := w.r
	defer r.saveView()
	r.rdsErr = fmt.Errorf("xds: route configuration %q, which listener %q names, does not exist on the management server %s", r.rdsName, r.listener, r.c.serverURI())
	r.unavailable(r.rdsErr)
}

// followRoutes switches the RDS subscription to name ("" for none).
func (r *listenerResolver) followRoutes(name string) {
	r.rdsName, r.rdsErr = name, nil
	r.rdsWatch = r.c.rewatch(r.rdsWatch, RouteConfigType, name, routeWatcher{r}, r.metrics)
}

// failed reports err to the channel when nothing was published yet;
// otherwise the last state stays in use and err is logged (gRFC A57).
func (r *listenerResolver) failed(on *error, err error) {
	defer r.saveView()
	*on = err
	if r.published == nil {
		r.cc.ReportError(err)
		return
	}
	r.logger.Warn("xds: keeping the last good state", "error", err)
}

// unavailable publishes a state that fails every request with err (the
// listener or its route configuration does not exist: gRFC A28), and
// unsubscribes from every cluster.
func (r *listenerResolver) unavailable(err error) {
	r.routes = nil
	r.logger.Warn("xds: no routes to serve", "error", err)
	st := emptyTree(r.listener, err)
	_ = r.offer(&st) // a state refused is forgotten
	r.dropClusters(nil)
}

// clusterSeen saves the view Describe reads.
func (r *listenerResolver) clusterSeen(*clusterFollower) { r.saveView() }

// treeChanged publishes the routes with the cluster's new tree, when
// every cluster is ready.
func (r *listenerResolver) treeChanged(f *clusterFollower, conv *eds.Conversion) {
	if conv != nil && (len(conv.LeftOut) > 0 || conv.NotUsable > 0) {
		f.logger.Warn("xds: parts of the assignment are left out of the tree", "localities", conv.LeftOut, "endpoints_not_healthy", conv.NotUsable)
	}
	r.reconcile()
}

// clusterFailed keeps the cluster's last tree; a cluster without one
// gets an empty tree that fails its requests with err.
func (r *listenerResolver) clusterFailed(f *clusterFollower, err error) {
	if f.tree == nil {
		r.reconcile()
		return
	}
	f.logger.Warn("xds: keeping the last good state", "error", err)
}

// reconcile follows every cluster the routes name and, once each has a
// tree or has failed, publishes the routes with their trees and
// unsubscribes from the clusters no longer named.
func (r *listenerResolver) reconcile() {
	if r.routes == nil {
		return
	}
	names := r.routes.Clusters()
	ready := true
	for _, name := range names {
		f := r.clusters[name]
		if f == nil {
			f = r.env.follower(name, r.logger.With("cluster", name), r)
			r.clusters[name] = f
			r.counters[name] = acquireCounter(name)
			f.start()
		}
		if _, ok := f.childTree(); !ok {
			ready = false
		}
	}
	if !ready {
		return
	}
	st, err := r.state(names)
	if err != nil {
		err = fmt.Errorf("xds: listener %q: %w", r.listener, err)
		r.failed(&r.rdsErr, err)
		return
	}
	if r.published == nil || !resolver.SameState(*r.published, st) {
		if err := r.offer(&st); err != nil {
			r.logger.Debug("xds: the channel refused the state", "error", err)
			return
		}
		if st.Degraded != nil {
			r.logger.Warn("xds: some clusters have no endpoints to serve", "error", st.Degraded)
		}
		r.logger.Debug("xds: published", "addresses", len(st.Addresses), "clusters", names)
	}
	r.dropClusters(names)
}

// dropClusters unsubscribes from every cluster not in keep.
func (r *listenerResolver) dropClusters(keep []string) {
	for name, f := range r.clusters {
		if !slices.Contains(keep, name) {
			f.stop()
			delete(r.clusters, name)
			delete(r.counters, name)
			releaseCounter(name)
		}
	}
}

// childTree returns the tree the cluster's child gets: its last tree, an
// empty one whose reason is its problem when it has none, or false while
// it waits for its resources.
func (f *clusterFollower) childTree() (resolver.State, bool) {
	if f.tree != nil {
		return *f.tree, true
	}
	if err := firstError(f.problems()); err != nil {
		return emptyTree(f.cluster, err), true
	}
	return resolver.State{}, false
}

// firstError returns the first non-nil error of errs.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// routingConfig is the xds_routing_experimental config the resolver
// publishes (see [routing.Config]).
type routingConfig struct {
	RouteConfig *route.Config                 `json:"routeConfig"`
	Clusters    map[string]routingClusterConf `json:"clusters"`
}

type routingClusterConf struct {
	ChildPolicy json.RawMessage `json:"childPolicy"`
}

// state builds the state of the routes and the clusters' trees.
func (r *listenerResolver) state(names []string) (resolver.State, error) {
	cfg := routingConfig{RouteConfig: r.routes.Config(), Clusters: make(map[string]routingClusterConf, len(names))}
	var st resolver.State
	var problems []string
	for _, name := range slices.Sorted(slices.Values(names)) {
		tree, _ := r.clusters[name].childTree()
		var sc struct {
			LoadBalancingConfig json.RawMessage `json:"loadBalancingConfig"`
		}
		if err := json.Unmarshal(tree.ServiceConfig, &sc); err != nil || len(sc.LoadBalancingConfig) == 0 {
			return resolver.State{}, fmt.Errorf("cluster %q: its tree has no loadBalancingConfig: %s", name, tree.ServiceConfig)
		}
		cfg.Clusters[name] = routingClusterConf{ChildPolicy: sc.LoadBalancingConfig}
		for _, a := range tree.Addresses {
			path, _ := hierarchy.Get(a)
			st.Addresses = append(st.Addresses, hierarchy.Set(a, append([]string{name}, path...)))
		}
		if tree.Degraded != nil {
			problems = append(problems, tree.Degraded.Error())
		}
	}
	sc, err := json.Marshal(map[string]any{"loadBalancingConfig": []map[string]routingConfig{{routing.Name: cfg}}})
	if err != nil {
		return resolver.State{}, fmt.Errorf("encoding the service config: %w", err)
	}
	st.ServiceConfig = sc
	st.Attributes = clusterimpl.WithCounters(st.Attributes, r.sharedCounters(names))
	if len(problems) > 0 {
		st.Degraded = errors.New(strings.Join(problems, "; "))
	}
	return st, nil
}

// sharedCounters returns the counters of the clusters named, by the
// name each xds_cluster_impl_experimental of their trees knows its
// cluster by: the cluster's, its assignment's cluster_name, and those of
// an aggregate cluster's leaves, which count in their own.
func (r *listenerResolver) sharedCounters(names []string) *clusterimpl.Counters {
	byCluster := make(map[string]*clusterimpl.Counter, len(names))
	for _, name := range names {
		byCluster[name] = r.counters[name]
	}
	for _, name := range names {
		f := r.clusters[name]
		if cla := f.cla.Assignment(); cla != nil && byCluster[cla.ClusterName] == nil {
			byCluster[cla.ClusterName] = r.counters[name]
		}
		if f.graph != nil {
			for _, l := range f.graph.leaves {
				if byCluster[l.name] == nil {
					byCluster[l.name] = l.counter
				}
			}
		}
	}
	if r.shared == nil || !maps.Equal(byCluster, r.byCluster) {
		r.shared, r.byCluster = clusterimpl.NewCounters(byCluster), byCluster
	}
	return r.shared
}

// offer publishes st to the channel ([offerState]).
func (r *listenerResolver) offer(st *resolver.State) error {
	return offerState(r.cc, &r.published, r.saveView, st)
}

// listenerView is what Describe shows of a listener resolver's state.
type listenerView struct {
	rdsName   string
	inline    bool
	routes    string
	clusters  []clusterView
	published *resolver.State
	problems  []error
}

// clusterView is what Describe shows of one cluster.
type clusterView struct {
	name    string
	state   string
	counter *clusterimpl.Counter
	resolverView
}

// saveView replaces the copy Describe reads. It runs inside the
// serializer, at the end of every callback.
func (r *listenerResolver) saveView() {
	v := &listenerView{rdsName: r.rdsName, inline: r.routes != nil && r.rdsName == "", published: r.published, problems: []error{r.ldsErr, r.rdsErr}}
	if r.routes != nil {
		v.routes = r.routes.Config().Name
	}
	for _, name := range slices.Sorted(maps.Keys(r.clusters)) {
		f := r.clusters[name]
		cv := clusterView{name: name, counter: r.counters[name], resolverView: resolverView{edsName: f.edsName, cfg: f.cfg, cla: f.cla.Assignment(), problems: f.problems(), graph: f.graphFacts()}}
		switch tree, ok := f.childTree(); {
		case !ok:
			cv.state = "waiting for its resources"
		case tree.Degraded != nil:
			cv.state = "no endpoints: " + tree.Degraded.Error()
		default:
			cv.state = fmt.Sprintf("%d addresses", len(tree.Addresses))
		}
		v.problems = append(v.problems, f.problems()...)
		v.clusters = append(v.clusters, cv)
	}
	r.view.Store(v)
}

// Describe says what the resolver follows and where it stands, for the
// channel's snapshot and debug page: the listener, the server and its
// stream, the route configuration and its version, and each cluster the
// routes name with its state and resources. It is safe for concurrent
// use, does no I/O and never waits.
func (r *listenerResolver) Describe() resolver.Description {
	server, ldsVersion, live := r.c.typeStatus(ListenerType)
	_, rdsVersion, _ := r.c.typeStatus(RouteConfigType)
	_, cdsVersion, _ := r.c.typeStatus(ClusterType)
	v := r.view.Load()
	if v == nil {
		v = &listenerView{}
	}
	facts := []resolver.Fact{
		{Name: "listener", Value: r.listener},
		{Name: "management server", Value: server},
		{Name: "ADS stream", Value: streamFact(live)},
		{Name: "listeners version", Value: ldsVersion},
	}
	switch {
	case v.rdsName != "":
		facts = append(facts, resolver.Fact{Name: "route configuration", Value: v.rdsName}, resolver.Fact{Name: "route configurations version", Value: rdsVersion})
	case v.inline:
		facts = append(facts, resolver.Fact{Name: "route configuration", Value: "inline " + fmt.Sprintf("%q", v.routes)})
	}
	if len(v.clusters) > 0 {
		facts = append(facts, resolver.Fact{Name: "clusters version", Value: cdsVersion})
	}
	for _, cv := range v.clusters {
		facts = append(facts, resolver.Fact{Name: "cluster " + cv.name, Value: cv.state})
		facts = append(facts, r.c.clusterFacts("cluster "+cv.name+": ", cv.counter, &cv.resolverView)...)
	}
	return resolver.Description{Facts: facts, LastError: lastError(v.published, v.problems)}
}
