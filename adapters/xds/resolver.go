package xds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/lbkit/lbkit/lb/clusterimpl"
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

// xdsResolver follows one cluster: its CDS resource says which EDS
// resource to follow and with which policies; each valid pair is
// published as the eds package's tree, straight to cc. An aggregate or
// LOGICAL_DNS cluster is handed to a clusterGraph instead (graph.go). Its state is owned
// by its client's serializer, where its watchers' callbacks run; Describe
// reads a copy (view) replaced after each of them.
type xdsResolver struct {
	c       *client
	key     poolKey
	cc      resolver.ClientConn
	cluster string
	logger  *slog.Logger
	// metrics makes the resolver's metric handles; nil without
	// [WithMetrics].
	metrics *resolverMetrics
	// counter counts the cluster's requests in flight, shared by the
	// process's resolvers of the cluster (gRFC A32); each state carries it.
	counter   *clusterimpl.Counter
	closeOnce sync.Once
	view      atomic.Pointer[resolverView]

	// dns builds the DNS resolvers of LOGICAL_DNS clusters.
	dns *dns.Builder
	// dnsClosing counts the graph's DNS resolvers being closed.
	dnsClosing sync.WaitGroup

	// Owned by c's serializer.
	// graph follows an aggregate or LOGICAL_DNS root (graph.go); nil for
	// an EDS root. rand seeds its DNS resolvers.
	graph     *clusterGraph
	rand      *rand.Rand
	cdsWatch  *subscription
	edsWatch  *subscription
	edsName   string
	cfg       *ClusterConfig
	cla       eds.Valid
	namer     eds.Namer
	published *resolver.State
	// The problems that still stand, for Describe: the cluster's and the
	// endpoints' (refused, missing, stream lost; cleared by their next
	// valid value) and the tree's (it cannot be built, or is empty;
	// cleared when a tree with addresses is published).
	cdsErr, edsErr, treeErr error
}

// resolverView is what Describe shows of a resolver's own state.
type resolverView struct {
	edsName   string
	cfg       *ClusterConfig
	cla       *eds.ClusterLoadAssignment
	published *resolver.State
	problems  []error
	graph     []resolver.Fact
}

// start subscribes to the cluster. It runs inside the serializer.
func (r *xdsResolver) start() {
	r.cdsWatch = r.c.watch(ClusterType, r.cluster, clusterWatcher{r}, r.metrics)
	r.saveView()
}

// saveView replaces the copy Describe reads. It runs inside the
// serializer, at the end of every callback.
func (r *xdsResolver) saveView() {
	v := &resolverView{edsName: r.edsName, cfg: r.cfg, cla: r.cla.Assignment(), published: r.published, problems: []error{r.cdsErr, r.edsErr, r.treeErr}}
	if r.graph != nil {
		v.graph, v.problems = r.graph.facts(), append(v.problems, r.graph.problem)
	}
	r.view.Store(v)
}

// Describe says what the resolver follows and where it stands, for the
// channel's snapshot and debug page: the cluster, the server and its
// stream, the versions accepted, the policies and the addresses published.
// It is safe for concurrent use, does no I/O and never waits.
func (r *xdsResolver) Describe() resolver.Description {
	server, cdsVersion, live := r.c.typeStatus(ClusterType)
	_, edsVersion, _ := r.c.typeStatus(EndpointType)
	v := r.view.Load()
	if v == nil {
		v = &resolverView{}
	}
	stream := "down (reconnecting)"
	if live {
		stream = "up"
	}
	facts := []resolver.Fact{
		{Name: "cluster", Value: r.cluster},
		{Name: "management server", Value: server},
		{Name: "ADS stream", Value: stream},
		{Name: "clusters version", Value: cdsVersion},
	}
	if v.edsName != "" {
		facts = append(facts, resolver.Fact{Name: "endpoints resource", Value: v.edsName}, resolver.Fact{Name: "endpoints version", Value: edsVersion})
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
		facts = append(facts, resolver.Fact{Name: "endpoint policy", Value: leaf}, resolver.Fact{Name: "outlier detection", Value: od})
	}
	facts = append(facts, v.graph...)
	facts = append(facts, r.limitFacts(v)...)
	if v.published != nil {
		facts = append(facts, resolver.Fact{Name: "addresses published", Value: strconv.Itoa(len(v.published.Addresses))})
	}
	d := resolver.Description{Facts: facts}
	// The reason of the state published last is left out: the channel's
	// snapshot shows it as the tree applies it (resolver.Description).
	var reason string
	if v.published != nil && v.published.Degraded != nil {
		reason = v.published.Degraded.Error()
	}
	var problems []string
	for _, err := range v.problems {
		if err != nil && err.Error() != reason && !slices.Contains(problems, err.Error()) {
			problems = append(problems, err.Error())
		}
	}
	d.LastError = strings.Join(problems, "; ")
	return d
}

// ResolveNow resolves the LOGICAL_DNS clusters of an aggregate cluster
// again (gRFC A37); it does nothing else: the management server pushes
// every change. It never blocks.
func (r *xdsResolver) ResolveNow() {
	r.c.ser.Schedule(func() {
		if r.graph != nil {
			r.graph.resolveNow()
		}
	})
}

// Close ends the subscriptions and releases the shared client; no call
// to the ClientConn happens after it returns. It waits for a callback of
// the client that is running (never for I/O).
func (r *xdsResolver) Close() {
	r.closeOnce.Do(func() {
		// Run comes after the scheduled start, so the subscriptions it
		// cancels exist; after it, no callback of theirs runs.
		r.c.ser.Run(context.Background(), func() {
			r.cdsWatch.cancel()
			r.endGraph()
			if r.edsWatch != nil {
				r.edsWatch.cancel()
			}
			if r.metrics != nil {
				r.c.removeStreamMetrics(r.metrics)
			}
		})
		r.dnsClosing.Wait()
		release(r.key)
		releaseCounter(r.cluster)
	})
}

// clusterWatcher receives the cluster's CDS resource.
type clusterWatcher struct{ r *xdsResolver }

func (w clusterWatcher) update(v any) {
	r := w.r
	defer r.saveView()
	cfg := v.(ClusterConfig)
	if len(cfg.Ignored) > 0 && (r.cfg == nil || !slices.Equal(r.cfg.Ignored, cfg.Ignored)) {
		r.logger.Warn("xds: the cluster sets fields lbkit ignores", "fields", cfg.Ignored)
	}
	r.cfg, r.cdsErr = &cfg, nil
	if cfg.EDSServiceName != r.edsName {
		r.followEndpoints(cfg.EDSServiceName)
	}
	if r.followGraph(&cfg) { // aggregate and LOGICAL_DNS clusters (graph.go)
		return
	}
	r.publish()
}

func (w clusterWatcher) failed(err error) { w.r.failed(&w.r.cdsErr, err) }

func (w clusterWatcher) missing() {
	r := w.r
	defer r.saveView()
	r.cfg = nil
	r.endGraph()
	r.followEndpoints("")
	r.cdsErr = fmt.Errorf("xds: cluster %q does not exist on the management server %s", r.cluster, r.c.serverURI())
	r.publishEmpty(r.cdsErr)
}

// endpointWatcher receives the cluster's EDS resource.
type endpointWatcher struct{ r *xdsResolver }

func (w endpointWatcher) update(v any) {
	r := w.r
	defer r.saveView()
	r.cla, r.edsErr = v.(eds.Valid), nil
	r.publish()
}

func (w endpointWatcher) failed(err error) { w.r.failed(&w.r.edsErr, err) }

func (w endpointWatcher) missing() {
	r := w.r
	defer r.saveView()
	r.cla = eds.Valid{}
	r.edsErr = fmt.Errorf("xds: cluster %q: its endpoints (EDS resource %q) do not exist on the management server %s", r.cluster, r.edsName, r.c.serverURI())
	r.publishEmpty(r.edsErr)
}

// followEndpoints switches the EDS subscription to name ("" for none).
func (r *xdsResolver) followEndpoints(name string) {
	if r.edsWatch != nil {
		r.edsWatch.cancel()
		r.edsWatch = nil
	}
	r.edsName, r.cla, r.namer = name, eds.Valid{}, eds.Namer{}
	if name != "" {
		r.edsWatch = r.c.watch(EndpointType, name, endpointWatcher{r}, r.metrics)
	}
}

// failed reports err to the channel when nothing good was published yet;
// otherwise the last good state stays in use and err is logged (gRFC
// A57).
func (r *xdsResolver) failed(on *error, err error) {
	defer r.saveView()
	*on = err
	if r.published == nil {
		r.cc.ReportError(err)
		return
	}
	r.logger.Warn("xds: keeping the last good state", "error", err)
}

// publish publishes the tree of the current cluster and assignment, when
// both are known and it changed.
func (r *xdsResolver) publish() {
	if r.cfg == nil || r.cla.Assignment() == nil {
		return
	}
	conv, err := r.namer.ConvertValid(r.cla, r.cfg.Policies)
	conv.State.Attributes = clusterimpl.WithCounter(conv.State.Attributes, r.counter)
	r.publishConversion(conv, err)
}

// publishConversion publishes conv's state, its reason prefixed with the
// cluster, unless it is the state published; err is the conversion's
// error, reported to the channel when nothing was published yet, with
// the last good state kept.
func (r *xdsResolver) publishConversion(conv eds.Conversion, err error) {
	if err != nil {
		err = fmt.Errorf("xds: cluster %q: %w", r.cluster, err)
		r.treeErr = err
		if r.published == nil {
			r.cc.ReportError(err)
		}
		r.logger.Warn("xds: cannot build the tree; keeping the last good state", "error", err)
		return
	}
	if conv.State.Degraded != nil {
		conv.State.Degraded = fmt.Errorf("xds: cluster %q: %w", r.cluster, conv.State.Degraded)
	}
	r.treeErr = nil
	if r.published != nil && resolver.SameState(*r.published, conv.State) {
		return
	}
	if len(conv.LeftOut) > 0 || conv.NotUsable > 0 {
		r.logger.Warn("xds: parts of the assignment are left out of the tree", "localities", conv.LeftOut, "endpoints_not_healthy", conv.NotUsable)
	}
	if err := r.offer(&conv.State); err != nil {
		r.logger.Debug("xds: the channel refused the state", "error", err)
		return
	}
	if conv.State.Degraded != nil {
		r.logger.Warn("xds: no endpoints to serve", "error", conv.State.Degraded)
	}
	r.logger.Debug("xds: published", "addresses", len(conv.State.Addresses))
}

// publishEmpty publishes a tree without endpoints whose reason
// (resolver.State.Degraded) is err, so that picks fail with err from the
// first picker of that tree.
func (r *xdsResolver) publishEmpty(err error) {
	r.logger.Warn("xds: no endpoints to serve", "error", err)
	conv, cerr := r.namer.Convert(&eds.ClusterLoadAssignment{ClusterName: r.cluster}, eds.Policies{})
	if cerr != nil {
		// An empty assignment always converts; should it not, the
		// channel still hears why there is nothing to serve.
		r.cc.ReportError(err)
		return
	}
	conv.State.Degraded = err
	_ = r.offer(&conv.State) // a state refused is forgotten
}

// offer publishes st to the channel. It is recorded, and the view
// Describe reads saved, before the channel has it, so that a snapshot
// taken after a pick from st shows st; a state the channel refuses is
// forgotten again.
func (r *xdsResolver) offer(st *resolver.State) error {
	prev := r.published
	r.published = st
	r.saveView()
	if err := r.cc.UpdateState(*st); err != nil {
		r.published = prev
		r.saveView()
		return err
	}
	return nil
}
