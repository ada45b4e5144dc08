package xds

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb/clusterimpl"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// xdsResolver follows one cluster ("xds-cluster:///CLUSTER"): its
// clusterFollower's trees are published straight to cc. Its state is
// owned by its client's serializer, where its watchers' callbacks run;
// Describe reads a copy (view) replaced after each of them.
type xdsResolver struct {
	c      *client
	key    poolKey
	cc     resolver.ClientConn
	f      *clusterFollower
	logger *slog.Logger
	// counter counts the cluster's requests in flight, shared by the
	// process's resolvers of the cluster (gRFC A32); each state carries it.
	counter   *clusterimpl.Counter
	closeOnce sync.Once
	view      atomic.Pointer[resolverView]

	// Owned by c's serializer.
	published *resolver.State
}

// resolverView is what Describe shows of a resolver's own state.
type resolverView struct {
	edsName   string
	cfg       *ClusterConfig
	cla       *eds.ClusterLoadAssignment
	published *resolver.State
	problems  []error
	// graph describes an aggregate or LOGICAL_DNS cluster's graph.
	graph []resolver.Fact
}

// start subscribes to the cluster. It runs inside the serializer.
func (r *xdsResolver) start() {
	r.f.start()
	r.saveView()
}

// saveView replaces the copy Describe reads. It runs inside the
// serializer, at the end of every callback.
func (r *xdsResolver) saveView() {
	f := r.f
	r.view.Store(&resolverView{edsName: f.edsName, cfg: f.cfg, cla: f.cla.Assignment(), published: r.published, problems: f.problems(), graph: f.graphFacts()})
}

// Describe says what the resolver follows and where it stands, for the
// channel's snapshot and debug page: the cluster, the server and its
// stream, the versions accepted, the policies and the addresses published.
// It is safe for concurrent use, does no I/O and never waits.
func (r *xdsResolver) Describe() resolver.Description {
	server, cdsVersion, live := r.c.typeStatus(ClusterType)
	v := r.view.Load()
	if v == nil {
		v = &resolverView{}
	}
	facts := []resolver.Fact{
		{Name: "cluster", Value: r.f.cluster},
		{Name: "management server", Value: server},
		{Name: "ADS stream", Value: streamFact(live)},
		{Name: "clusters version", Value: cdsVersion},
	}
	facts = append(facts, r.c.clusterFacts("", r.counter, v)...)
	if v.published != nil {
		facts = append(facts, resolver.Fact{Name: "addresses published", Value: strconv.Itoa(len(v.published.Addresses))})
	}
	return resolver.Description{Facts: facts, LastError: lastError(v.published, v.problems)}
}

// streamFact is how Describe shows the ADS stream.
func streamFact(live bool) string {
	if live {
		return "up"
	}
	return "down (reconnecting)"
}

// clusterFacts returns what Describe shows of one cluster's resources,
// each fact's name prefixed with prefix.
func (c *client) clusterFacts(prefix string, counter *clusterimpl.Counter, v *resolverView) []resolver.Fact {
	var facts []resolver.Fact
	if v.edsName != "" {
		_, edsVersion, _ := c.typeStatus(EndpointType)
		facts = append(facts, resolver.Fact{Name: prefix + "endpoints resource", Value: v.edsName}, resolver.Fact{Name: prefix + "endpoints version", Value: edsVersion})
	}
	if v.cfg != nil {
		leaf := string(v.cfg.Policies.Endpoint)
		if leaf == "" {
			leaf = "default"
		}
		od := "off"
		if len(v.cfg.Policies.OutlierDetection) > 0 {
			od = string(v.cfg.Policies.OutlierDetection)
		}
		facts = append(facts, resolver.Fact{Name: prefix + "endpoint policy", Value: leaf}, resolver.Fact{Name: prefix + "outlier detection", Value: od})
	}
	for _, g := range v.graph {
		facts = append(facts, resolver.Fact{Name: prefix + g.Name, Value: g.Value})
	}
	return append(facts, limitFacts(prefix, counter, v)...)
}

// lastError joins the problems that stand, each once, leaving out those
// the reason of the state published last says: the channel's snapshot
// shows it as the tree applies it (resolver.Description).
func lastError(published *resolver.State, problems []error) string {
	var reason string
	if published != nil && published.Degraded != nil {
		reason = published.Degraded.Error()
	}
	var out []string
	for _, err := range problems {
		if err != nil && !strings.Contains(reason, err.Error()) && !slices.Contains(out, err.Error()) {
			out = append(out, err.Error())
		}
	}
	return strings.Join(out, "; ")
}

// ResolveNow resolves the LOGICAL_DNS clusters of an aggregate cluster
// again (gRFC A37); it does nothing else: the management server pushes
// every change. It never blocks.
func (r *xdsResolver) ResolveNow() { r.c.ser.Schedule(r.f.resolveNow) }

// Close ends the subscriptions and releases the shared client; no call
// to the ClientConn happens after it returns. It waits for a callback of
// the client that is running (never for I/O).
func (r *xdsResolver) Close() {
	r.closeOnce.Do(func() {
		// Run comes after the scheduled start, so the subscriptions it
		// cancels exist; after it, no callback of theirs runs.
		r.c.ser.Run(context.Background(), func() {
			r.f.stop()
			if r.f.metrics != nil {
				r.c.removeStreamMetrics(r.f.metrics)
			}
		})
		r.f.env.dnsClosing.Wait()
		release(r.key)
		releaseCounter(r.f.cluster)
	})
}

// clusterSeen saves the view Describe reads.
func (r *xdsResolver) clusterSeen(*clusterFollower) { r.saveView() }

// treeChanged publishes the cluster's new tree, when it changed.
func (r *xdsResolver) treeChanged(f *clusterFollower, conv *eds.Conversion) {
	st := *f.tree
	if conv == nil {
		// An empty tree: published with its reason, without the counter.
		_ = r.offer(&st) // a state refused is forgotten
		return
	}
	st.Attributes = clusterimpl.WithCounter(st.Attributes, r.counter)
	if r.published != nil && resolver.SameState(*r.published, st) {
		return
	}
	if len(conv.LeftOut) > 0 || conv.NotUsable > 0 {
		r.logger.Warn("xds: parts of the assignment are left out of the tree", "localities", conv.LeftOut, "endpoints_not_healthy", conv.NotUsable)
	}
	if err := r.offer(&st); err != nil {
		r.logger.Debug("xds: the channel refused the state", "error", err)
		return
	}
	if st.Degraded != nil {
		r.logger.Warn("xds: no endpoints to serve", "error", st.Degraded)
	}
	r.logger.Debug("xds: published", "addresses", len(st.Addresses))
}

// clusterFailed reports err to the channel when nothing good was
// published yet; otherwise the last good state stays in use and err is
// logged (gRFC A57).
func (r *xdsResolver) clusterFailed(f *clusterFollower, err error) {
	if r.published == nil {
		r.cc.ReportError(err)
		return
	}
	if err == f.treeErr {
		r.logger.Warn("xds: cannot build the tree; keeping the last good state", "error", err)
		return
	}
	r.logger.Warn("xds: keeping the last good state", "error", err)
}

// offer publishes st to the channel ([offerState]).
func (r *xdsResolver) offer(st *resolver.State) error {
	return offerState(r.cc, &r.published, r.saveView, st)
}

// offerState publishes st to cc for a resolver of this package whose
// state published last is *published and whose Describe reads the view
// save saves. st is recorded, and the view saved, before the channel has
// it, so that a snapshot taken after a pick from st shows st; a state the
// channel refuses is forgotten again. It runs inside the client's
// serializer.
func offerState(cc resolver.ClientConn, published **resolver.State, save func(), st *resolver.State) error {
	prev := *published
	*published = st
	save()
	if err := cc.UpdateState(*st); err != nil {
		*published = prev
		save()
		return err
	}
	return nil
}
