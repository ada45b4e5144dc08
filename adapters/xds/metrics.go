package xds

import (
	"reflect"
	"strings"

	"github.com/lbkit/lbkit/lb"
)

// The XdsClient metrics of gRFC A78
// (https://github.com/grpc/proposal/blob/master/A78-grpc-metrics-wrr-pf-xds.md),
// recorded by resolvers built by a Builder given [WithMetrics]. Resolvers
// of every target share one client per management server (see [Builder]),
// so each resolver records its own channel's view, labeled with its
// target: the stream's health as it sees it, and the resources it watches
// (its cluster and that cluster's endpoints).
var (
	// MetricConnected is 1 while the ADS stream works, 0 from a
	// connectivity failure or a stream that ended without a response
	// until the first response on a new stream (gRFC A57).
	MetricConnected = lb.RegisterMetric(&lb.MetricDesc{
		Name: "grpc.xds_client.connected", Unit: "{bool}", Kind: lb.MetricGauge,
		Description: "Whether the xDS client has a working ADS stream to the xDS server.",
		Labels:      []string{"grpc.target", "grpc.xds.server"},
	})
	// MetricServerFailure counts the server going from healthy (or not
	// yet known) to unhealthy.
	MetricServerFailure = lb.RegisterMetric(&lb.MetricDesc{
		Name: "grpc.xds_client.server_failure", Unit: "{failure}", Kind: lb.MetricCounter,
		Description: "xDS servers going from healthy to unhealthy.",
		Labels:      []string{"grpc.target", "grpc.xds.server"},
	})
	// MetricResourceUpdatesValid counts valid copies received of the
	// resources the channel watches, changed or not.
	MetricResourceUpdatesValid = lb.RegisterMetric(&lb.MetricDesc{
		Name: "grpc.xds_client.resource_updates_valid", Unit: "{resource}", Kind: lb.MetricCounter,
		Description: "Resources received that were considered valid.",
		Labels:      []string{"grpc.target", "grpc.xds.server", "grpc.xds.resource_type"},
	})
	// MetricResourceUpdatesInvalid counts invalid copies received of the
	// resources the channel watches.
	MetricResourceUpdatesInvalid = lb.RegisterMetric(&lb.MetricDesc{
		Name: "grpc.xds_client.resource_updates_invalid", Unit: "{resource}", Kind: lb.MetricCounter,
		Description: "Resources received that were considered invalid.",
		Labels:      []string{"grpc.target", "grpc.xds.server", "grpc.xds.resource_type"},
	})
	// MetricResources is the number of the channel's watched resources
	// in each cache state: "requested", "does_not_exist", "acked",
	// "nacked" and "nacked_but_cached". The authority is "#old": lbkit
	// has no xdstp names.
	MetricResources = lb.RegisterMetric(&lb.MetricDesc{
		Name: "grpc.xds_client.resources", Unit: "{resource}", Kind: lb.MetricGauge,
		Description: "Number of xDS resources.",
		Labels:      []string{"grpc.target", "grpc.xds.authority", "grpc.xds.cache_state", "grpc.xds.resource_type"},
	})
)

// cacheState is a watched resource's state, as MetricResources labels it.
type cacheState int8

const (
	stateRequested cacheState = iota
	stateDoesNotExist
	stateAcked
	stateNacked
	stateNackedButCached
	numCacheStates
	stateNone cacheState = -1 // not recorded yet
)

var cacheStateNames = [numCacheStates]string{"requested", "does_not_exist", "acked", "nacked", "nacked_but_cached"}

// stateOf returns r's cache state.
func stateOf(r *resource) cacheState {
	switch {
	case r.missing:
		return stateDoesNotExist
	case r.has && r.err != nil:
		return stateNackedButCached
	case r.has:
		return stateAcked
	case r.err != nil:
		return stateNacked
	}
	return stateRequested
}

// streamMetrics are one resolver's handles on the stream's health.
type streamMetrics struct {
	connected lb.Gauge
	failures  lb.Counter
}

// watchMetrics are one subscription's handles. state is owned by the
// client's serializer.
type watchMetrics struct {
	valid, invalid lb.Counter
	states         [numCacheStates]lb.Gauge
	state          cacheState
}

// resolverMetrics makes a resolver's handles: rec, its target and the
// management server label them. Resolvers of one target (two channels
// with the same target) share their handles through the client, which
// keys them by key(), so a target's series count each event once.
type resolverMetrics struct {
	rec            lb.MetricsRecorder
	id             any // rec when comparable, else a value standing for it
	target, server string
}

// metricsKey identifies a target's series at one client.
type metricsKey struct {
	rec    any
	target string
}

func (m *resolverMetrics) key() metricsKey { return metricsKey{m.id, m.target} }

// newResolverMetrics returns the handle maker of a resolver recording into
// rec for target; self stands for rec in keys when rec's type cannot be
// compared (self must be the same for every resolver recording into rec).
func newResolverMetrics(rec lb.MetricsRecorder, self any, target, server string) *resolverMetrics {
	id := any(rec)
	if !reflect.TypeOf(rec).Comparable() {
		id = self
	}
	return &resolverMetrics{rec: rec, id: id, target: target, server: server}
}

func (m *resolverMetrics) stream() *streamMetrics {
	return &streamMetrics{
		connected: m.rec.Gauge(MetricConnected, m.target, m.server),
		failures:  m.rec.Counter(MetricServerFailure, m.target, m.server),
	}
}

func (m *resolverMetrics) watch(typeURL string) *watchMetrics {
	typ := strings.TrimPrefix(typeURL, "type.googleapis.com/")
	w := &watchMetrics{
		valid:   m.rec.Counter(MetricResourceUpdatesValid, m.target, m.server, typ),
		invalid: m.rec.Counter(MetricResourceUpdatesInvalid, m.target, m.server, typ),
		state:   stateNone,
	}
	for s := range w.states {
		w.states[s] = m.rec.Gauge(MetricResources, m.target, "#old", cacheStateNames[s], typ)
	}
	return w
}

// note records that the subscription's resource is in state s. It runs
// inside the client's serializer.
func (w *watchMetrics) note(s cacheState) {
	if w == nil || w.state == s {
		return
	}
	if w.state != stateNone {
		w.states[w.state].Set(0)
	}
	if s != stateNone {
		w.states[s].Set(1)
	}
	w.state = s
}
