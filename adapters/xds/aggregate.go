package xds

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	"google.golang.org/protobuf/proto"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/dns"
)

// ClusterKind is how a cluster finds its endpoints (gRFC A37).
type ClusterKind int

// The kinds of clusters lbkit follows.
const (
	// ClusterEDS is a cluster of type EDS: its endpoints come from the
	// ClusterLoadAssignment named by EDSServiceName, over ADS.
	ClusterEDS ClusterKind = iota
	// ClusterLogicalDNS is a cluster of type LOGICAL_DNS: its endpoints
	// are the addresses DNS gives for DNSHostPort, as one locality.
	// load_assignment must hold exactly one locality with exactly one
	// endpoint whose socket_address has a non-empty address and a
	// port_value from 1 to 65535 (gRFC A37's validation; lbkit also
	// refuses a host its dns resolver would refuse, and port 0).
	ClusterLogicalDNS
	// ClusterAggregate is a cluster whose cluster_type.typed_config is an
	// envoy.extensions.clusters.aggregate.v3.ClusterConfig with at least
	// one cluster: its endpoints are those of the clusters listed, the
	// first cluster's priorities first (gRFC A37).
	ClusterAggregate
)

// String returns the kind as xDS spells it: "EDS", "LOGICAL_DNS" or
// "aggregate".
func (k ClusterKind) String() string {
	switch k {
	case ClusterEDS:
		return "EDS"
	case ClusterLogicalDNS:
		return "LOGICAL_DNS"
	case ClusterAggregate:
		return "aggregate"
	}
	return "ClusterKind(" + strconv.Itoa(int(k)) + ")"
}

// aggregateTypeURL is the type_url of an aggregate cluster's typed_config.
const aggregateTypeURL = "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig"

// discovery fills in cfg's Kind and the fields of that kind from c, gRFC
// A37's "Validation" rules; the error names the field at fault.
func discovery(c *clusterv3.Cluster, cfg *ClusterConfig) *ResourceError {
	if ct := c.GetClusterType(); ct != nil {
		cfg.Kind = ClusterAggregate
		clusters, err := aggregateClusters(ct)
		cfg.Clusters = clusters
		return err
	}
	switch t := c.GetType(); t {
	case clusterv3.Cluster_EDS:
		cfg.Kind = ClusterEDS
		if err := checkEDS(c); err != nil {
			return err
		}
		cfg.EDSServiceName = c.GetEdsClusterConfig().GetServiceName()
		if cfg.EDSServiceName == "" {
			cfg.EDSServiceName = cfg.Name
		}
		return nil
	case clusterv3.Cluster_LOGICAL_DNS:
		cfg.Kind = ClusterLogicalDNS
		hostPort, err := logicalDNSAddress(c)
		cfg.DNSHostPort = hostPort
		return err
	default:
		return fieldErrorf("type", "%s is not supported (lbkit supports EDS, LOGICAL_DNS and aggregate clusters)", t)
	}
}

// aggregateClusters returns the clusters an aggregate cluster's
// cluster_type lists.
func aggregateClusters(ct *clusterv3.Cluster_CustomClusterType) ([]string, *ResourceError) {
	tc := ct.GetTypedConfig()
	switch {
	case tc == nil:
		return nil, fieldErrorf("cluster_type.typed_config", "required (cluster_type %q)", ct.GetName())
	case tc.GetTypeUrl() != aggregateTypeURL:
		return nil, fieldErrorf("cluster_type.typed_config.type_url", "%q is not supported (lbkit supports only the aggregate cluster, %s)", tc.GetTypeUrl(), aggregateTypeURL)
	}
	var agg aggregatev3.ClusterConfig
	if err := proto.Unmarshal(tc.GetValue(), &agg); err != nil {
		return nil, fieldErrorf("cluster_type.typed_config.value", "not an envoy.extensions.clusters.aggregate.v3.ClusterConfig: %v", err)
	}
	clusters := agg.GetClusters()
	if len(clusters) == 0 {
		return nil, fieldErrorf("cluster_type.typed_config.value.clusters", "required: at least one cluster")
	}
	for i, name := range clusters {
		if name == "" {
			return nil, fieldErrorf("cluster_type.typed_config.value.clusters["+strconv.Itoa(i)+"]", "empty cluster name")
		}
	}
	return clusters, nil
}

// logicalDNSAddress returns the "host:port" of a LOGICAL_DNS cluster.
func logicalDNSAddress(c *clusterv3.Cluster) (string, *ResourceError) {
	la := c.GetLoadAssignment()
	path := "load_assignment"
	if la == nil {
		return "", fieldErrorf(path, "required for a LOGICAL_DNS cluster (gRFC A37)")
	}
	if n := len(la.GetEndpoints()); n != 1 {
		return "", fieldErrorf(path+".endpoints", "%d entries, want exactly 1 for a LOGICAL_DNS cluster (gRFC A37)", n)
	}
	path += ".endpoints[0].lb_endpoints"
	lbes := la.GetEndpoints()[0].GetLbEndpoints()
	if n := len(lbes); n != 1 {
		return "", fieldErrorf(path, "%d entries, want exactly 1 for a LOGICAL_DNS cluster (gRFC A37)", n)
	}
	path += "[0].endpoint"
	ep := lbes[0].GetEndpoint()
	if ep == nil {
		return "", fieldErrorf(path, "required")
	}
	path += ".address"
	if ep.GetAddress() == nil {
		return "", fieldErrorf(path, "required")
	}
	path += ".socket_address"
	sa := ep.GetAddress().GetSocketAddress()
	if sa == nil {
		return "", fieldErrorf(path, "required")
	}
	if sa.GetAddress() == "" {
		return "", fieldErrorf(path+".address", "required")
	}
	pv, ok := sa.GetPortSpecifier().(*corev3.SocketAddress_PortValue)
	if !ok {
		return "", fieldErrorf(path+".port_value", "required")
	}
	if pv.PortValue == 0 || pv.PortValue > 65535 {
		return "", fieldErrorf(path+".port_value", "%d is not a port (1 to 65535)", pv.PortValue)
	}
	hostPort := net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(pv.PortValue), 10))
	if err := (&dns.Builder{}).ValidateTarget(resolver.Target{Scheme: dns.Scheme, Endpoint: hostPort}); err != nil {
		return "", fieldErrorf(path+".address", "%q cannot be resolved: %v", sa.GetAddress(), err)
	}
	return hostPort, nil
}

// maxAggregateDepth is gRFC A37's limit on the depth of the tree of
// aggregate clusters; the root is at depth 1.
const maxAggregateDepth = 16

// clusterState is what the resolver knows of one cluster of the graph.
type clusterState int

const (
	// clusterPending: no answer from the management server yet.
	clusterPending clusterState = iota
	// clusterKnown: its last valid resource is known.
	clusterKnown
	// clusterMissing: the management server says it does not exist.
	clusterMissing
)

// graphWalk is what [walkGraph] finds from a root cluster.
type graphWalk struct {
	// Reached lists every cluster reached, in the order first reached:
	// the resolver keeps a CDS watch on each.
	Reached []string
	// Leaves are the EDS and LOGICAL_DNS clusters in priority order, each
	// once, at the place it is first reached (gRFC A37). Valid only when
	// Err is nil and Pending is empty.
	Leaves []string
	// Pending lists the clusters reached whose resources are not known
	// yet: until none is left nothing is published (gRFC A37).
	Pending []string
	// Missing lists the clusters reached that do not exist; Err then says
	// so (unless the graph is too deep).
	Missing []string
	// Err is why the graph cannot be used: a cluster that does not
	// exist, an aggregate cluster deeper than 16 levels, or no leaf
	// cluster at all. It names the resource.
	Err error
}

// walkGraph walks the graph of clusters from root depth first, as gRFC
// A37 describes: an aggregate cluster's clusters are visited in order, a
// leaf (EDS or LOGICAL_DNS) is listed when first reached, and a cluster
// reached again (through a loop or a second path) adds nothing. lookup
// gives each cluster's state and, when known, its config; it is called
// once per cluster reached. The walk goes on past pending clusters, so
// that every watch the graph needs is known at once, but stops at the
// first cluster deeper than 16 levels. It is a pure function of lookup.
func walkGraph(root string, lookup func(name string) (clusterState, *ClusterConfig)) graphWalk {
	var w graphWalk
	seen := make(map[string]bool)
	var visit func(name string, depth int) bool
	visit = func(name string, depth int) bool {
		if seen[name] {
			return true
		}
		if depth > maxAggregateDepth {
			w.Err = fmt.Errorf("xds: cluster %q: the aggregate cluster graph from %q is deeper than %d levels (gRFC A37)", name, root, maxAggregateDepth)
			return false
		}
		seen[name] = true
		w.Reached = append(w.Reached, name)
		state, cfg := lookup(name)
		switch {
		case state == clusterPending:
			w.Pending = append(w.Pending, name)
			return true
		case state == clusterMissing || cfg == nil:
			w.Missing = append(w.Missing, name)
			return true
		case cfg.Kind != ClusterAggregate:
			w.Leaves = append(w.Leaves, name)
			return true
		}
		for _, child := range cfg.Clusters {
			if !visit(child, depth+1) {
				return false
			}
		}
		return true
	}
	visit(root, 1)
	switch {
	case w.Err != nil:
	case len(w.Missing) > 0:
		w.Err = fmt.Errorf("xds: cluster %s of the aggregate cluster graph from %q does not exist", quoteAll(w.Missing), root)
	case len(w.Pending) == 0 && len(w.Leaves) == 0:
		w.Err = fmt.Errorf("xds: cluster %q: the aggregate cluster graph has no EDS or LOGICAL_DNS cluster (only aggregate clusters in a loop)", root)
	}
	return w
}

// quoteAll quotes each name and joins them with commas.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
