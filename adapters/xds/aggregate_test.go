package xds

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
)

// Short names for the clusters of these tests.
var (
	aggregateOf = controlplane.AggregateCluster
	logicalDNS  = controlplane.LogicalDNSCluster
)

func TestParseAggregateAndLogicalDNSClusters(t *testing.T) {
	cfg, err := ParseCluster(aggregateOf("agg", "primary", "secondary"))
	if err != nil || cfg.Kind != ClusterAggregate || !slices.Equal(cfg.Clusters, []string{"primary", "secondary"}) || cfg.EDSServiceName != "" {
		t.Errorf("aggregate: %+v, %v", cfg, err)
	}
	if cfg.Policies.MaxConcurrentRequests == nil || len(cfg.Policies.Endpoint) == 0 {
		t.Errorf("aggregate: policies not parsed: %+v", cfg.Policies)
	}
	for _, tc := range []struct{ host, want string }{{"localhost", "localhost:8080"}, {"::1", "[::1]:8080"}, {"127.0.0.1", "127.0.0.1:8080"}} {
		cfg, err = ParseCluster(logicalDNS("dns", tc.host, 8080))
		if err != nil || cfg.Kind != ClusterLogicalDNS || cfg.DNSHostPort != tc.want || cfg.EDSServiceName != "" {
			t.Errorf("LOGICAL_DNS %s: %+v, %v; want %s", tc.host, cfg, err, tc.want)
		}
	}
	for k, want := range map[ClusterKind]string{ClusterEDS: "EDS", ClusterLogicalDNS: "LOGICAL_DNS", ClusterAggregate: "aggregate", 7: "ClusterKind(7)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(k), k.String(), want)
		}
	}
}

// Malformed aggregate and LOGICAL_DNS clusters are NACKed with the field
// at fault (gRFC A37's "Validation").
func TestParseAggregateAndLogicalDNSErrors(t *testing.T) {
	mod := func(c *clusterv3.Cluster, f func(*clusterv3.Cluster)) *clusterv3.Cluster { f(c); return c }
	sa := func(c *clusterv3.Cluster) *corev3.SocketAddress {
		return c.LoadAssignment.Endpoints[0].LbEndpoints[0].GetEndpoint().Address.GetSocketAddress()
	}
	const saPath = "load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address"
	for _, tc := range []struct {
		name    string
		cluster *clusterv3.Cluster
		field   string
		text    string
	}{
		{"empty list", aggregateOf("a"), "cluster_type.typed_config.value.clusters", "required: at least one cluster"},
		{"empty name", aggregateOf("a", "x", ""), "cluster_type.typed_config.value.clusters[1]", "empty cluster name"},
		{"other type_url", mod(aggregateOf("a", "x"), func(c *clusterv3.Cluster) { c.GetClusterType().TypedConfig.TypeUrl = "type.googleapis.com/foo.Bar" }),
			"cluster_type.typed_config.type_url", `"type.googleapis.com/foo.Bar" is not supported`},
		{"bad value", mod(aggregateOf("a", "x"), func(c *clusterv3.Cluster) { c.GetClusterType().TypedConfig.Value = []byte{0xff} }),
			"cluster_type.typed_config.value", "not an envoy.extensions.clusters.aggregate.v3.ClusterConfig"},
		{"two localities", mod(logicalDNS("d", "h", 80), func(c *clusterv3.Cluster) {
			c.LoadAssignment.Endpoints = append(c.LoadAssignment.Endpoints, c.LoadAssignment.Endpoints[0])
		}), "load_assignment.endpoints", "2 entries, want exactly 1"},
		{"no endpoint", mod(logicalDNS("d", "h", 80), func(c *clusterv3.Cluster) { c.LoadAssignment.Endpoints[0].LbEndpoints = nil }),
			"load_assignment.endpoints[0].lb_endpoints", "0 entries, want exactly 1"},
		{"no address", mod(logicalDNS("d", "h", 80), func(c *clusterv3.Cluster) {
			c.LoadAssignment.Endpoints[0].LbEndpoints[0].GetEndpoint().Address = nil
		}), "load_assignment.endpoints[0].lb_endpoints[0].endpoint.address", "required"},
		{"empty host", mod(logicalDNS("d", "h", 80), func(c *clusterv3.Cluster) { sa(c).Address = "" }), saPath + ".address", "required"},
		{"named port", mod(logicalDNS("d", "h", 80), func(c *clusterv3.Cluster) {
			sa(c).PortSpecifier = &corev3.SocketAddress_NamedPort{NamedPort: "http"}
		}), saPath + ".port_value", "required"},
		{"port 0", logicalDNS("d", "h", 0), saPath + ".port_value", "0 is not a port"},
		{"port too big", logicalDNS("d", "h", 70000), saPath + ".port_value", "70000 is not a port"},
		{"bad host", logicalDNS("d", "a b/c", 80), saPath + ".address", `"a b/c" cannot be resolved`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCluster(tc.cluster)
			var re *ResourceError
			if !errors.As(err, &re) || re.Path != tc.field || re.Resource != tc.cluster.GetName() || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %v; want a ResourceError of %q at %s containing %q", err, tc.cluster.GetName(), tc.field, tc.text)
			}
		})
	}
}

// graphLookup serves walkGraph from a map; names absent are pending,
// names mapped to nil are missing.
func graphLookup(g map[string]*ClusterConfig) func(string) (clusterState, *ClusterConfig) {
	return func(name string) (clusterState, *ClusterConfig) {
		cfg, ok := g[name]
		switch {
		case !ok:
			return clusterPending, nil
		case cfg == nil:
			return clusterMissing, nil
		}
		return clusterKnown, cfg
	}
}

func agg(children ...string) *ClusterConfig {
	return &ClusterConfig{Kind: ClusterAggregate, Clusters: children}
}

var edsLeaf = &ClusterConfig{Kind: ClusterEDS}

func TestWalkGraph(t *testing.T) {
	chain := map[string]*ClusterConfig{"leaf": edsLeaf}
	for i := 1; i <= 16; i++ {
		next := fmt.Sprintf("c%d", i+1)
		if i == 16 {
			next = "leaf"
		}
		chain[fmt.Sprintf("c%d", i)] = agg(next)
	}
	for _, tc := range []struct {
		name    string
		root    string
		graph   map[string]*ClusterConfig
		leaves  []string
		pending []string
		err     string
	}{
		{"A37's example", "A", map[string]*ClusterConfig{"A": agg("B", "C"), "B": edsLeaf, "C": agg("D", "E"), "D": edsLeaf, "E": {Kind: ClusterLogicalDNS}},
			[]string{"B", "D", "E"}, nil, ""},
		{"a leaf root", "B", map[string]*ClusterConfig{"B": edsLeaf}, []string{"B"}, nil, ""},
		{"duplicates at their first place", "A", map[string]*ClusterConfig{"A": agg("B", "C", "B"), "B": edsLeaf, "C": agg("D", "B"), "D": edsLeaf},
			[]string{"B", "D"}, nil, ""},
		{"a loop is tolerated", "A", map[string]*ClusterConfig{"A": agg("B", "A"), "B": agg("A", "L"), "L": edsLeaf}, []string{"L"}, nil, ""},
		{"pending clusters", "A", map[string]*ClusterConfig{"A": agg("B", "C", "D"), "C": edsLeaf}, []string{"C"}, []string{"B", "D"}, ""},
		{"a missing cluster", "A", map[string]*ClusterConfig{"A": agg("B", "C"), "B": nil, "C": edsLeaf}, nil, nil, `cluster "B" of the aggregate cluster graph from "A" does not exist`},
		{"naming itself only", "A", map[string]*ClusterConfig{"A": agg("A")}, nil, nil, `cluster "A": the aggregate cluster graph has no EDS or LOGICAL_DNS cluster`},
		{"16 levels", "c1", chain, nil, nil, `cluster "leaf": the aggregate cluster graph from "c1" is deeper than 16 levels`},
		{"15 levels", "c2", chain, []string{"leaf"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := walkGraph(tc.root, graphLookup(tc.graph))
			if tc.err != "" {
				if w.Err == nil || !strings.Contains(w.Err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", w.Err, tc.err)
				}
				return
			}
			if w.Err != nil || !slices.Equal(w.Leaves, tc.leaves) || !slices.Equal(w.Pending, tc.pending) {
				t.Errorf("leaves %v pending %v err %v; want %v %v", w.Leaves, w.Pending, w.Err, tc.leaves, tc.pending)
			}
		})
	}
}

// modelLeaves is gRFC A37's text taken literally: expand the tree of
// clusters from root, each aggregate cluster's clusters in order, every
// path (cutting a cluster that is already on the path, which would
// expand forever), into the list of leaf clusters with duplicates; then
// keep each leaf "in the earliest position in the list in which it is
// seen". A cluster's depth is the depth at which the expansion first
// reaches it; reaching one deeper than 16 is an error. It reports
// whether the expansion stayed within budget steps.
func modelLeaves(root string, g map[string]*ClusterConfig, budget int) (leaves []string, tooDeep, missing, pending bool, ok bool) {
	var all []string
	firstDepth := map[string]int{}
	var expand func(name string, path []string) bool
	expand = func(name string, path []string) bool {
		if budget--; budget < 0 {
			return false
		}
		if slices.Contains(path, name) {
			return true
		}
		depth := len(path) + 1
		if _, seen := firstDepth[name]; !seen {
			firstDepth[name] = depth
			if depth > maxAggregateDepth {
				tooDeep = true
			}
		}
		cfg, known := g[name]
		switch {
		case !known:
			pending = true
			return true
		case cfg == nil:
			missing = true
			return true
		case cfg.Kind != ClusterAggregate:
			all = append(all, name)
			return true
		}
		for _, c := range cfg.Clusters {
			if !expand(c, append(slices.Clip(path), name)) {
				return false
			}
		}
		return true
	}
	if !expand(root, nil) {
		return nil, false, false, false, false
	}
	for _, l := range all {
		if !slices.Contains(leaves, l) {
			leaves = append(leaves, l)
		}
	}
	return leaves, tooDeep, missing, pending, true
}

// drawGraph draws a graph of clusters c0 (the root) to c<n-1>: each
// pending (absent), missing (nil), a leaf or an aggregate cluster, in
// shares drawn per graph, an aggregate's clusters mostly the next one and
// otherwise any; half the graphs are long chains of aggregates ending in a
// leaf, around the depth limit.
func drawGraph(t *rapid.T) map[string]*ClusterConfig {
	n := rapid.IntRange(1, 24).Draw(t, "clusters")
	aggPct := rapid.IntRange(0, 100).Draw(t, "aggregate %")
	badPct := rapid.IntRange(0, 20).Draw(t, "pending or missing %")
	if rapid.Bool().Draw(t, "long chain") {
		// Around the depth limit: aggregates with a leaf at the end, a
		// few leaves on the way.
		n, aggPct, badPct = rapid.IntRange(14, 24).Draw(t, "chain length"), 95, 0
	}
	name := func(i int) string { return fmt.Sprintf("c%d", i) }
	g := make(map[string]*ClusterConfig)
	for i := range n {
		roll := rapid.IntRange(0, 99).Draw(t, "roll "+name(i))
		switch {
		case roll < badPct/2:
			// pending: absent
		case roll < badPct:
			g[name(i)] = nil
		case roll < badPct+(100-badPct)*aggPct/100:
			var children []string
			for range rapid.IntRange(1, 3).Draw(t, "children of "+name(i)) {
				if rapid.IntRange(0, 3).Draw(t, "forward") > 0 {
					children = append(children, name(min(i+1, n-1)))
				} else {
					children = append(children, name(rapid.IntRange(0, n-1).Draw(t, "child")))
				}
			}
			g[name(i)] = agg(children...)
		default:
			g[name(i)] = &ClusterConfig{Kind: ClusterKind(rapid.IntRange(0, 1).Draw(t, "leaf kind"))}
		}
	}
	if aggPct == 95 && g[name(n-1)] != nil && g[name(n-1)].Kind == ClusterAggregate {
		g[name(n-1)] = edsLeaf
	}
	return g
}

// The walk matches the model on random graphs: chains (to pass the depth
// limit), diamonds, loops, missing and pending clusters.
func TestWalkGraphMatchesA37Model(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawGraph(t)
		leaves, tooDeep, missing, pending, ok := modelLeaves("c0", g, 200_000)
		if !ok {
			t.Skip("the model's expansion is too large")
		}
		w := walkGraph("c0", graphLookup(g))
		switch {
		case tooDeep:
			if w.Err == nil || !strings.Contains(w.Err.Error(), "deeper than 16") {
				t.Fatalf("model: too deep; walk: %v", w.Err)
			}
		case missing:
			if w.Err == nil || !strings.Contains(w.Err.Error(), "does not exist") {
				t.Fatalf("model: a cluster is missing; walk: %v", w.Err)
			}
		case pending:
			if w.Err != nil || len(w.Pending) == 0 {
				t.Fatalf("model: a cluster is pending; walk: pending %v, err %v", w.Pending, w.Err)
			}
		case len(leaves) == 0:
			if w.Err == nil || !strings.Contains(w.Err.Error(), "no EDS or LOGICAL_DNS cluster") {
				t.Fatalf("model: no leaf; walk: %v", w.Err)
			}
		default:
			if w.Err != nil || len(w.Pending) > 0 || !slices.Equal(w.Leaves, leaves) {
				t.Fatalf("walk: leaves %v pending %v err %v; model: %v", w.Leaves, w.Pending, w.Err, leaves)
			}
		}
		if w.Err == nil {
			for _, r := range w.Reached {
				if _, inModel := g[r]; !inModel && !slices.Contains(w.Pending, r) {
					t.Fatalf("reached %s is neither known nor pending", r)
				}
			}
		}
	})
}

// FuzzAggregateCluster feeds arbitrary bytes as an aggregate cluster's
// ClusterConfig and a LOGICAL_DNS cluster's host: ParseCluster returns a
// ResourceError or a config of the right kind, never panics.
func FuzzAggregateCluster(f *testing.F) {
	v, _ := proto.Marshal(&aggregatev3.ClusterConfig{Clusters: []string{"a", "b"}})
	f.Add(v, "localhost", uint32(80))
	f.Add([]byte{}, "", uint32(0))
	f.Add([]byte{0x0a, 0x00}, "[::1]", uint32(65536))
	f.Fuzz(func(t *testing.T, raw []byte, host string, port uint32) {
		c := aggregateOf("a")
		c.GetClusterType().TypedConfig.Value = raw
		cfg, err := ParseCluster(c)
		var re *ResourceError
		switch {
		case err != nil && !errors.As(err, &re):
			t.Fatalf("error %v is not a ResourceError", err)
		case err == nil && (cfg.Kind != ClusterAggregate || len(cfg.Clusters) == 0 || slices.Contains(cfg.Clusters, "")):
			t.Fatalf("accepted %x as %+v", raw, cfg)
		}
		cfg, err = ParseCluster(logicalDNS("d", host, port))
		switch {
		case err != nil && !errors.As(err, &re):
			t.Fatalf("error %v is not a ResourceError", err)
		case err == nil && (cfg.Kind != ClusterLogicalDNS || cfg.DNSHostPort == "" || port == 0 || port > 65535):
			t.Fatalf("accepted %q:%d as %+v", host, port, cfg)
		}
	})
}
