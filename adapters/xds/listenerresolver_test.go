package xds_test

import (
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// rdsListener returns an API listener whose HTTP connection manager
// takes its routes from the RDS resource routes.
func rdsListener(t testing.TB, name, routes string) *listenerv3.Listener {
	t.Helper()
	l, err := controlplane.RDSListener(name, routes)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// routesTo returns a route configuration sending every request to
// cluster.
func routesTo(name, cluster string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{
		Domains: []string{"*"},
		Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
		}},
	}}}
}

// followListener builds a resolver for the target xds:///name with b and
// closes it when the test ends.
func followListener(t testing.TB, b *xds.Builder, name string, clk clock.Clock) (*lbtest.ResolverClientConn, resolver.Resolver) {
	t.Helper()
	cc := &lbtest.ResolverClientConn{}
	r, err := b.Build(resolver.Target{Scheme: xds.Scheme, Endpoint: "/" + name}, cc, resolver.BuildOptions{
		Clock: clk, Logger: slog.New(&lbtest.Logs{}), Rand: rand.New(rand.NewPCG(1, 2)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return cc, r
}

// routingConfig is the part of a published service config the tests read.
type publishedRouting struct {
	LoadBalancingConfig []struct {
		Routing struct {
			RouteConfig struct {
				Name string `json:"name"`
			} `json:"routeConfig"`
			Clusters map[string]json.RawMessage `json:"clusters"`
		} `json:"xds_routing_experimental"`
	} `json:"loadBalancingConfig"`
}

func clustersOf(t testing.TB, st resolver.State) []string {
	t.Helper()
	var sc publishedRouting
	if err := json.Unmarshal(st.ServiceConfig, &sc); err != nil || len(sc.LoadBalancingConfig) != 1 {
		t.Fatalf("service config %s: %v", st.ServiceConfig, err)
	}
	var names []string
	for name := range sc.LoadBalancingConfig[0].Routing.Clusters {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func fact(d resolver.Description, name string) string {
	for _, f := range d.Facts {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// TestListenerTargetPublishesOneRoutingTree: xds:///NAME follows the
// listener the bootstrap's template names (gRFC A27), its inline routes
// and their cluster, and publishes one xds_routing_experimental state
// whose addresses sit under the cluster's name; Describe shows the
// listener, the routes and the cluster.
func TestListenerTargetPublishesOneRoutingTree(t *testing.T) {
	cp := startControlPlane(t)
	if err := cp.SetResources("1", listenerToOneEndpoint(t, "mesh/front", "c1")); err != nil {
		t.Fatal(err)
	}
	boot := &xds.Bootstrap{Servers: []xds.Server{{URI: cp.addr, Creds: xds.Creds{Type: "insecure"}}}, Node: xds.Node{ID: testNode}, ListenerNameTemplate: "mesh/%s"}
	b, err := xds.NewBuilder(xds.WithBootstrap(boot), xds.WithBackoff(noJitter))
	if err != nil {
		t.Fatal(err)
	}
	cc, r := followListener(t, b, "front", clock.NewMock())
	st := cc.NextState(t)
	if got := clustersOf(t, st); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("clusters %v, want [c1]", got)
	}
	if len(st.Addresses) != 1 || st.Degraded != nil {
		t.Fatalf("state %+v, want one address", st)
	}
	if path, _ := hierarchy.Get(st.Addresses[0]); len(path) < 2 || path[0] != "c1" {
		t.Errorf("path %v, want it under c1", path)
	}
	xds.Sync(t, r)
	d := r.(resolver.Describer).Describe()
	for name, want := range map[string]string{"listener": "mesh/front", "route configuration": `inline "mesh/front"`, "cluster c1": "1 addresses", "listeners version": "1"} {
		if got := fact(d, name); got != want {
			t.Errorf("Describe: %s = %q, want %q (%+v)", name, got, want, d)
		}
	}
}

// TestDroppedClusterIsUnsubscribedAfterTheUpdate: a route configuration
// that moves from c1 to c2 is published once c2 is known, and c1 is
// unsubscribed after it.
func TestDroppedClusterIsUnsubscribedAfterTheUpdate(t *testing.T) {
	cp := startControlPlane(t)
	res := controlplane.Resources{
		Listeners: []*listenerv3.Listener{rdsListener(t, "front", "r1")},
		Routes:    []*routev3.RouteConfiguration{routesTo("r1", "c1")},
		Clusters:  []*clusterv3.Cluster{clusterNamed("c1"), clusterNamed("c2")},
		Assignments: []*endpointv3.ClusterLoadAssignment{
			assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80"}}),
			assignment("c2", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.2:80"}}),
		},
	}
	if err := cp.SetResources("1", res); err != nil {
		t.Fatal(err)
	}
	cc, r := followListener(t, testBuilder(t, cp.addr), "front", clock.NewMock())
	if got := clustersOf(t, cc.NextState(t)); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("clusters %v, want [c1]", got)
	}
	res.Routes = []*routev3.RouteConfiguration{routesTo("r1", "c2")}
	if err := cp.SetResources("2", res); err != nil {
		t.Fatal(err)
	}
	st := cc.NextState(t)
	if got := clustersOf(t, st); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("clusters %v, want [c2]", got)
	}
	if len(st.Addresses) != 1 || st.Addresses[0].Addr != "10.0.0.2:80" {
		t.Errorf("addresses %v, want c2's", st.Addresses)
	}
	cp.waitRequest(ctxFor(t), func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.ClusterType && slices.Equal(r.GetResourceNames(), []string{"c2"})
	})
	xds.Sync(t, r)
	if d := r.(resolver.Describer).Describe(); fact(d, "cluster c1") != "" || fact(d, "route configuration") != "r1" || fact(d, "route configurations version") != "2" {
		t.Errorf("Describe: %+v, want r1 at version 2 and c1 gone", d)
	}
}

// TestListenerRemovedFailsEveryRequest: a listener the server no longer
// has publishes a state that fails every request with the reason (gRFC
// A27/A28); a route configuration that does not exist does the same.
func TestListenerRemovedFailsEveryRequest(t *testing.T) {
	cp := startControlPlane(t)
	res := listenerToOneEndpoint(t, "front", "c1")
	if err := cp.SetResources("1", res); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewMock()
	cc, r := followListener(t, testBuilder(t, cp.addr), "front", clk)
	if st := cc.NextState(t); len(st.Addresses) != 1 {
		t.Fatalf("state %+v, want one address", st)
	}
	res.Listeners = nil
	if err := cp.SetResources("2", res); err != nil {
		t.Fatal(err)
	}
	st := cc.NextState(t)
	if len(st.Addresses) != 0 || st.Degraded == nil || !strings.Contains(st.Degraded.Error(), `listener "front" does not exist`) {
		t.Fatalf("state %+v, want no address and the listener named as missing", st)
	}

	// The listener comes back naming a route configuration that does not
	// exist: its does-not-exist timer fails every request again.
	res.Listeners = []*listenerv3.Listener{rdsListener(t, "front", "nowhere")}
	if err := cp.SetResources("3", res); err != nil {
		t.Fatal(err)
	}
	xds.WaitClient(t, r, func(v xds.ClientView) bool { return slices.Contains(v.Waiting, "routes/nowhere") })
	lbtest.AdvanceSerializers(t, clk, xds.DefaultResourceTimeout, xds.SerializerOf(r))
	st = cc.NextState(t)
	if len(st.Addresses) != 0 || st.Degraded == nil || !strings.Contains(st.Degraded.Error(), `route configuration "nowhere", which listener "front" names, does not exist`) {
		t.Fatalf("state %+v, want the route configuration named as missing", st)
	}
}

// TestListenerClustersCountInTheProcesssCounters: a cluster's requests
// in flight under a listener count in the cluster's process-wide counter
// (gRFC A32), shared with an xds-cluster:///CLUSTER channel of the same
// cluster: the state carries it in clusterimpl.Counters under the
// cluster's name (clusterimpl.TestCountersGiveEachClusterItsCounter shows
// the balancer counting in it), and an update that changes nothing is not
// published again.
func TestListenerClustersCountInTheProcesssCounters(t *testing.T) {
	cp := startControlPlane(t)
	if err := cp.SetResources("1", listenerToOneEndpoint(t, "front", "c1")); err != nil {
		t.Fatal(err)
	}
	b := testBuilder(t, cp.addr)
	clk := clock.NewMock()
	cc, lr := followListener(t, b, "front", clk)
	cc.NextState(t)
	_, cr := follow(t, b, "c1", clk, &lbtest.Logs{})
	if l, c := xds.CounterOf(t, lr, "c1"), xds.CounterOf(t, cr, "c1"); l == nil || l != c {
		t.Errorf("the listener's c1 counts in %p, the cluster channel in %p", l, c)
	}
	if err := cp.SetResources("2", listenerToOneEndpoint(t, "front", "c1")); err != nil {
		t.Fatal(err)
	}
	cp.waitRequest(ctxFor(t), acked(xds.EndpointType, "2"))
	xds.Sync(t, lr)
	if n := cc.Events.Pending(); n != 0 {
		t.Errorf("the same resources again published %v", cc.Events.Peek())
	}
}

// TestRouteToAnAggregateWithAFailedClusterIsPublished: a route names an
// aggregate cluster one of whose clusters is refused before it was ever
// known; the listener does not wait for it: the aggregate's requests fail
// with the refusal, and the routes are published.
func TestRouteToAnAggregateWithAFailedClusterIsPublished(t *testing.T) {
	cp := startControlPlane(t)
	bad := clusterNamed("bad")
	bad.LbPolicy = clusterv3.Cluster_RANDOM
	res := controlplane.Resources{
		Listeners: []*listenerv3.Listener{rdsListener(t, "front", "r1")},
		Routes:    []*routev3.RouteConfiguration{routesTo("r1", "agg")},
		Clusters:  []*clusterv3.Cluster{controlplane.AggregateCluster("agg", "bad", "primary"), bad, clusterNamed("primary")},
		Assignments: []*endpointv3.ClusterLoadAssignment{
			assignment("primary", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80"}}),
		},
	}
	if err := cp.SetResources("1", res); err != nil {
		t.Fatal(err)
	}
	cc, _ := followListener(t, testBuilder(t, cp.addr), "front", clock.NewMock())
	st := cc.NextState(t)
	if got := clustersOf(t, st); !slices.Equal(got, []string{"agg"}) {
		t.Fatalf("clusters %v, want [agg]", got)
	}
	if st.Degraded == nil || !strings.Contains(st.Degraded.Error(), `cluster "bad" of the aggregate cluster "agg"`) {
		t.Errorf("Degraded %v, want the refusal of cluster bad", st.Degraded)
	}
}

// listenerToOneEndpoint returns an API listener named listener whose inline
// route sends everything to cluster, the cluster, and its assignment of
// one endpoint (10.0.0.1:80 in zone a).
func listenerToOneEndpoint(t *testing.T, listener, cluster string) controlplane.Resources {
	t.Helper()
	l, err := controlplane.APIListener(listener, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return controlplane.Resources{
		Listeners:   []*listenerv3.Listener{l},
		Clusters:    []*clusterv3.Cluster{clusterNamed(cluster)},
		Assignments: []*endpointv3.ClusterLoadAssignment{assignment(cluster, locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80"}})},
	}
}
