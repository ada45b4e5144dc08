package xds_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Resource types as grpc.xds.resource_type labels them.
const (
	cdsType = "envoy.config.cluster.v3.Cluster"
	edsType = "envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// metricsCase is a resolver for cluster c1 of a real control plane,
// recording into m, with its mock clock, logs and target label.
type metricsCase struct {
	cp     *testPlane
	m      *lbtest.Metrics
	clk    *clock.Mock
	logs   *lbtest.Logs
	cc     *lbtest.ResolverClientConn
	r      resolver.Resolver
	target string
}

// newMetricsCase serves clusters and assignments as version 1 and follows
// c1 with metrics.
func newMetricsCase(t *testing.T, clusters []*clusterv3.Cluster, assignments []*endpointv3.ClusterLoadAssignment) *metricsCase {
	t.Helper()
	c := &metricsCase{cp: startControlPlane(t), m: lbtest.NewMetrics(), clk: clock.NewMock(), logs: &lbtest.Logs{}}
	c.cp.set("1", clusters, assignments)
	c.cc, c.r = follow(t, testBuilder(t, c.cp.addr, xds.WithMetrics(c.m)), "c1", c.clk, c.logs)
	c.target = resolver.Target{Scheme: xds.ClusterScheme, Endpoint: "c1"}.String()
	return c
}

// TestXdsClientMetrics checks gRFC A78's XdsClient metrics through a
// resolver following a real go-control-plane server: valid and invalid
// resources, the cache states of the resources the channel watches, the
// stream's health across a server restart, and the gauges a closed
// resolver leaves at 0.
func TestXdsClientMetrics(t *testing.T) {
	c := newMetricsCase(t, []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	cp, m, clk, cc, r, target := c.cp, c.m, c.clk, c.cc, c.r, c.target
	server := cp.addr
	states := func(typ string, want map[string]int64) {
		t.Helper()
		for _, s := range []string{"requested", "does_not_exist", "acked", "nacked", "nacked_but_cached"} {
			m.Want(t, want[s], "grpc.xds_client.resources", target, "#old", s, typ)
		}
	}

	cc.NextState(t)
	ctx := ctxFor(t)
	cp.waitRequest(ctx, acked(xds.EndpointType, "1"))
	m.Want(t, 1, "grpc.xds_client.connected", target, server)
	m.Want(t, 0, "grpc.xds_client.server_failure", target, server)
	for _, typ := range []string{cdsType, edsType} {
		// Each copy counts, changed or not: a server may send one again.
		if n := m.Value("grpc.xds_client.resource_updates_valid", target, server, typ); n < 1 {
			t.Errorf("valid %s updates = %d, want at least 1", typ, n)
		}
	}
	states(cdsType, map[string]int64{"acked": 1})
	states(edsType, map[string]int64{"acked": 1})

	// A refused assignment: the last good one stays cached.
	bad := assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.9:80"}})
	bad.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = nil
	cp.set("2", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{bad})
	cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.EndpointType && r.GetErrorDetail() != nil
	})
	if n := m.Value("grpc.xds_client.resource_updates_invalid", target, server, edsType); n < 1 {
		t.Errorf("invalid endpoints updates = %d, want at least 1", n)
	}
	states(edsType, map[string]int64{"nacked_but_cached": 1})
	states(cdsType, map[string]int64{"acked": 1})
	m.Want(t, 0, "grpc.xds_client.resource_updates_invalid", target, server, cdsType)

	// The server goes away: the stream had responses, so its end is not
	// a failure (gRFC A57); the reconnection that finds no server is.
	cp.stop()
	waitBackoff(t, r, clk, 1)
	m.Want(t, 0, "grpc.xds_client.connected", target, server)
	m.Want(t, 1, "grpc.xds_client.server_failure", target, server)

	// Back, and answering: connected again; no other failure.
	cp.restart()
	advance(t, r, clk, time.Second)
	cp.set("3", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{
		assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.5:80"}}),
	})
	cc.NextState(t)
	m.Want(t, 1, "grpc.xds_client.connected", target, server)
	m.Want(t, 1, "grpc.xds_client.server_failure", target, server)
	states(edsType, map[string]int64{"acked": 1})

	// A closed resolver's channel has no stream and watches nothing.
	r.Close()
	m.Want(t, 0, "grpc.xds_client.connected", target, server)
	states(cdsType, nil)
	states(edsType, nil)
}

// TestXdsClientMetricsOfAMissingCluster checks the requested and
// does_not_exist cache states: a cluster the server never sends is
// requested until the resource timer says it does not exist.
func TestXdsClientMetricsOfAMissingCluster(t *testing.T) {
	c := newMetricsCase(t, []*clusterv3.Cluster{clusterNamed("other")}, nil)
	m, clk, cc, r, target := c.m, c.clk, c.cc, c.r, c.target
	waitTimer(t, r, "cluster/c1")
	m.Want(t, 1, "grpc.xds_client.resources", target, "#old", "requested", cdsType)
	advance(t, r, clk, xds.DefaultResourceTimeout)
	cc.NextState(t) // the empty tree of a cluster that does not exist
	m.Want(t, 0, "grpc.xds_client.resources", target, "#old", "requested", cdsType)
	m.Want(t, 1, "grpc.xds_client.resources", target, "#old", "does_not_exist", cdsType)
}

func TestWithMetricsRefusesNil(t *testing.T) {
	if _, err := xds.NewBuilder(xds.WithMetrics(nil)); err == nil {
		t.Fatal("WithMetrics(nil): no error")
	}
}

// docs/observability.md lists every XdsClient metric with its labels.
func TestObservabilityDocListsTheXdsClientMetrics(t *testing.T) {
	lbtest.WantDocumented(t, "../../docs/observability.md", []*lb.MetricDesc{xds.MetricConnected, xds.MetricServerFailure, xds.MetricResourceUpdatesValid, xds.MetricResourceUpdatesInvalid, xds.MetricResources})
}

// TestInvalidCopyOfAMissingResourceIsNacked checks that a resource the
// timer found missing and then received invalid is "nacked" (A78:
// received but not valid), not "does_not_exist" (found by review).
func TestInvalidCopyOfAMissingResourceIsNacked(t *testing.T) {
	c := newMetricsCase(t, []*clusterv3.Cluster{clusterNamed("c1")}, nil)
	cp, m, clk, cc, r, target := c.cp, c.m, c.clk, c.cc, c.r, c.target
	waitTimer(t, r, "endpoints/c1")
	advance(t, r, clk, xds.DefaultResourceTimeout)
	cc.NextState(t) // the empty tree: the endpoints do not exist
	m.Want(t, 1, "grpc.xds_client.resources", target, "#old", "does_not_exist", edsType)

	bad := assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.9:80"}})
	bad.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = nil
	cp.set("2", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{bad})
	cp.waitRequest(ctxFor(t), func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.EndpointType && r.GetErrorDetail() != nil
	})
	m.Want(t, 0, "grpc.xds_client.resources", target, "#old", "does_not_exist", edsType)
	m.Want(t, 1, "grpc.xds_client.resources", target, "#old", "nacked", edsType)
	// go-control-plane sends a NACKed version again: each copy counts.
	if n := m.Value("grpc.xds_client.resource_updates_invalid", target, cp.addr, edsType); n < 1 {
		t.Errorf("invalid endpoints updates = %d, want at least 1", n)
	}
}

// TestTwoChannelsOfOneTargetCountOnce checks that two resolvers of one
// target (two channels) record each event once and that closing one
// leaves the other's series as they are, as one XdsClient per target
// would (found by review).
func TestTwoChannelsOfOneTargetCountOnce(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	m := lbtest.NewMetrics()
	clk := clock.NewMock()
	logs := &lbtest.Logs{}
	b := testBuilder(t, cp.addr, xds.WithMetrics(m))
	cc1, r1 := follow(t, b, "c1", clk, logs)
	cc2, _ := follow(t, b, "c1", clk, logs)
	cc1.NextState(t)
	cc2.NextState(t)
	target := resolver.Target{Scheme: xds.ClusterScheme, Endpoint: "c1"}.String()
	m.Want(t, 1, "grpc.xds_client.resources", target, "#old", "acked", cdsType)

	cp.stop()
	waitBackoff(t, r1, clk, 1)
	m.Want(t, 1, "grpc.xds_client.server_failure", target, cp.addr)
	cp.restart()
	advance(t, r1, clk, time.Second)
	cp.set("2", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{
		assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.5:80"}}),
	})
	cc1.NextState(t)
	cc2.NextState(t)
	r1.Close()
	m.Want(t, 1, "grpc.xds_client.connected", target, cp.addr)
	m.Want(t, 1, "grpc.xds_client.resources", target, "#old", "acked", cdsType)
	m.Want(t, 1, "grpc.xds_client.server_failure", target, cp.addr)
}

// TestTargetLabelIsTheChannelsTarget checks that grpc.target is the
// channel's target as given, the label of the channel's own metrics, and
// not the parsed form (found by review).
func TestTargetLabelIsTheChannelsTarget(t *testing.T) {
	addrs, stop := exampleServers("blue")
	defer stop()
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("shop")}, []*endpointv3.ClusterLoadAssignment{
		assignment("shop", locality{Zone: "a", Weight: 1, Addrs: addrs}),
	})
	m := lbtest.NewMetrics()
	ch, err := conn.New("xds-cluster:shop", conn.WithResolver(testBuilder(t, cp.addr, xds.WithMetrics(m))))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	if name, err := get(&http.Client{Transport: tr}); name != "blue" {
		t.Fatalf("request: %q, %v", name, err)
	}
	m.Want(t, 1, "grpc.xds_client.connected", "xds-cluster:shop", cp.addr)
	m.Want(t, 0, "grpc.xds_client.connected", "xds-cluster:///shop", cp.addr)
}
