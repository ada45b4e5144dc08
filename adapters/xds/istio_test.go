package xds_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/conn"
)

// reviewsListener is the listener istiod names for the service
// reviews.default on port 9080, which a proxyless client's target
// xds:///reviews.default.svc.cluster.local:9080 follows.
const reviewsListener = "reviews.default.svc.cluster.local:9080"

// subset returns the name istiod gives the cluster of one subset of
// reviews:9080.
func subset(s string) string { return "outbound|9080|" + s + "|reviews.default.svc.cluster.local" }

// istioResources reads testdata/istio/reviews.json, the resources istiod
// sends for reviews with a canary split (v1 90, v2 10) and a header route
// (end-user: jason to v3), with the endpoints' placeholder ports 10001,
// 10002 and 10003 replaced by those of addrs (host:port on 127.0.0.1).
func istioResources(t testing.TB, addrs []string) controlplane.Resources {
	t.Helper()
	raw, err := os.ReadFile("testdata/istio/reviews.json")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for i, a := range addrs {
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		text = strings.ReplaceAll(text, `"portValue": `+strconv.Itoa(10001+i), `"portValue": `+port)
	}
	var doc struct {
		Listeners, Routes, Clusters, Endpoints []json.RawMessage
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	var res controlplane.Resources
	read := func(kind string, m proto.Message, raws []json.RawMessage) {
		t.Helper()
		for _, r := range raws {
			if err := protojson.Unmarshal(r, m); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			switch m := m.(type) {
			case *listenerv3.Listener:
				res.Listeners = append(res.Listeners, proto.Clone(m).(*listenerv3.Listener))
			case *routev3.RouteConfiguration:
				res.Routes = append(res.Routes, proto.Clone(m).(*routev3.RouteConfiguration))
			case *clusterv3.Cluster:
				res.Clusters = append(res.Clusters, proto.Clone(m).(*clusterv3.Cluster))
			case *endpointv3.ClusterLoadAssignment:
				res.Assignments = append(res.Assignments, proto.Clone(m).(*endpointv3.ClusterLoadAssignment))
			}
		}
	}
	read("listeners", &listenerv3.Listener{}, doc.Listeners)
	read("routes", &routev3.RouteConfiguration{}, doc.Routes)
	read("clusters", &clusterv3.Cluster{}, doc.Clusters)
	read("endpoints", &endpointv3.ClusterLoadAssignment{}, doc.Endpoints)
	return res
}

// istioCase is a channel following reviewsListener on a real management
// server serving istioResources, with backends "v1", "v2" and "v3" (one
// per subset) on loopback.
type istioCase struct {
	t      *testing.T
	cp     *testPlane
	res    controlplane.Resources
	ch     *conn.Channel
	client *http.Client
}

func newIstioCase(t *testing.T, opts ...conn.Option) *istioCase {
	t.Helper()
	addrs := namedServers(t, "v1", "v2", "v3")
	c := &istioCase{t: t, cp: startControlPlane(t), res: istioResources(t, addrs)}
	c.push("1")
	ch, err := conn.New("xds:///"+reviewsListener, append(opts, conn.WithResolver(testBuilder(t, c.cp.addr)))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	t.Cleanup(tr.CloseIdleConnections)
	c.ch, c.client = ch, &http.Client{Transport: tr}
	c.warm()
	return c
}

// push publishes c.res as version v.
func (c *istioCase) push(v string) {
	c.t.Helper()
	if err := c.cp.SetResources(v, c.res); err != nil {
		c.t.Fatal(err)
	}
}

// routes returns the route configuration c.res holds, to edit before a
// push.
func (c *istioCase) routes() *routev3.RouteConfiguration { return c.res.Routes[0] }

// get sends one request for reviews:9080 with the headers (name, value
// pairs) through client, and returns the backend that answered.
func get9080(client *http.Client, headers ...string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://reviews:9080/reviews/1", nil)
	if err != nil {
		return "", err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// count sends n requests with the headers and counts them by backend.
func (c *istioCase) count(n int, headers ...string) map[string]int {
	c.t.Helper()
	seen := map[string]int{}
	for range n {
		name, err := get9080(c.client, headers...)
		if err != nil {
			c.t.Fatal(err)
		}
		seen[name]++
	}
	return seen
}

// warm sends requests until every backend has answered one (so that
// every cluster's connection is READY) and each route has been taken.
func (c *istioCase) warm() {
	c.t.Helper()
	c.until("v3 to answer jason", func() bool { name, err := get9080(c.client, "end-user", "jason"); return c.ok(err) && name == "v3" })
	seen := map[string]bool{}
	c.until("v1 and v2 to answer", func() bool {
		name, err := get9080(c.client)
		seen[name] = c.ok(err)
		return seen["v1"] && seen["v2"]
	})
}

// ok fails the test on err.
func (c *istioCase) ok(err error) bool {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
	return true
}

// until calls cond until it holds, failing the test if that takes
// longer than the guard against hangs.
func (c *istioCase) until(what string, cond func() bool) {
	c.t.Helper()
	ctx := ctxFor(c.t)
	for !cond() {
		if ctx.Err() != nil {
			c.t.Fatalf("waited in vain for %s", what)
		}
	}
}

// waitNack waits for the client's NACK of a resource of type url.
func (c *istioCase) waitNack(url string) *discoveryv3.DiscoveryRequest {
	c.t.Helper()
	return c.cp.waitRequest(ctxFor(c.t), func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == url && r.GetErrorDetail() != nil
	})
}

// wantSplit checks that n requests without headers split exactly by the
// weights of v1 and v2 (n a multiple of their period).
func (c *istioCase) wantSplit(n, v1, v2 int, when string) {
	c.t.Helper()
	got := c.count(n)
	want := map[string]int{"v1": n * v1 / (v1 + v2), "v2": n * v2 / (v1 + v2)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		c.t.Errorf("%s: %d requests went to %v, want %v", when, n, got, want)
	}
}

// TestIstioCanarySplitIsExact follows an Istio-shaped listener, route
// configuration (RDS), clusters and endpoints on a real go-control-plane
// server: 10,000 HTTP requests through adapters/nethttp split 90/10
// between the subsets' backends exactly (weighted clusters by EDF, gRFC
// A28), well within the 1 percentage point asked.
func TestIstioCanarySplitIsExact(t *testing.T) {
	c := newIstioCase(t)
	const n = 10000
	got := c.count(n)
	share := float64(got["v2"]) / n * 100
	t.Logf("%d requests: v1 %d, v2 %d (canary %.2f%%)", n, got["v1"], got["v2"], share)
	if share < 9 || share > 11 || got["v1"]+got["v2"] != n {
		t.Fatalf("canary share %.2f%% (%v), want 10%% within 1 point", share, got)
	}
	if got["v1"] != 9000 || got["v2"] != 1000 {
		t.Errorf("split %v, want exactly v1:9000 v2:1000 (EDF over a period of 10)", got)
	}
}

// TestIstioHeaderRouteTakesOnlyMatchingRequests: the route matching
// end-user: jason sends every such request, and only those, to v3.
func TestIstioHeaderRouteTakesOnlyMatchingRequests(t *testing.T) {
	c := newIstioCase(t)
	if got := c.count(200, "end-user", "jason"); got["v3"] != 200 {
		t.Errorf("end-user: jason went to %v, want v3 only", got)
	}
	if got := c.count(200, "end-user", "mallory"); got["v3"] != 0 {
		t.Errorf("end-user: mallory went to %v, want no v3", got)
	}
	if got := c.count(1000); got["v3"] != 0 || got["v1"] != 900 || got["v2"] != 100 {
		t.Errorf("requests without the header went to %v, want v1:900 v2:100", got)
	}
}

// TestIstioRouteChangeMovesTrafficInOneUpdate pushes a new route
// configuration (the canary at 80%, and a route for x-rev: 2): from the
// first request routed by it, every request follows it exactly.
func TestIstioRouteChangeMovesTrafficInOneUpdate(t *testing.T) {
	c := newIstioCase(t)
	c.wantSplit(1000, 90, 10, "before")
	vh := c.routes().GetVirtualHosts()[0]
	split := vh.GetRoutes()[1].GetRoute().GetWeightedClusters().GetClusters()
	split[0].Weight.Value, split[1].Weight.Value = 20, 80
	probe := proto.Clone(vh.GetRoutes()[0]).(*routev3.Route)
	probe.Name = "rev2"
	probe.GetMatch().GetHeaders()[0].Name = "x-rev"
	probe.GetMatch().GetHeaders()[0].GetStringMatch().MatchPattern = &matcherv3.StringMatcher_Exact{Exact: "2"}
	vh.Routes = append([]*routev3.Route{probe}, vh.GetRoutes()...)
	c.push("2")
	// Before the update, x-rev requests take the split; the first that
	// reaches v3 was routed by the new configuration.
	c.until("the new route", func() bool { name, err := get9080(c.client, "x-rev", "2"); return c.ok(err) && name == "v3" })
	c.wantSplit(1000, 20, 80, "after")
}

// TestIstioRouteConfigNackKeepsTheLastGoodRouting pushes a route
// configuration with a regex RE2 refuses: the client NACKs it, naming the
// field, and the routing of the last good one stays.
func TestIstioRouteConfigNackKeepsTheLastGoodRouting(t *testing.T) {
	c := newIstioCase(t)
	routes := c.routes().GetVirtualHosts()[0].GetRoutes()
	split := routes[1].GetRoute().GetWeightedClusters().GetClusters()
	split[0].Weight.Value, split[1].Weight.Value = 50, 50
	routes[0].GetMatch().GetHeaders()[0].GetStringMatch().MatchPattern = &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "(jason"}}
	c.push("2")
	nack := c.waitNack(xds.RouteConfigType)
	if msg := nack.GetErrorDetail().GetMessage(); !strings.Contains(msg, reviewsListener) || !strings.Contains(msg, "safeRegex") {
		t.Errorf("NACK %q, want it to name the route configuration and the field", msg)
	}
	c.wantSplit(1000, 90, 10, "after the NACK")
	if got := c.count(100, "end-user", "jason"); got["v3"] != 100 {
		t.Errorf("after the NACK, jason went to %v", got)
	}
}

// TestIstioClusterNackKeepsTheLastGoodCluster pushes v2's cluster with a
// load-balancing policy lbkit refuses: the client NACKs it and v2 keeps
// its last good cluster, so the canary split stays.
func TestIstioClusterNackKeepsTheLastGoodCluster(t *testing.T) {
	c := newIstioCase(t)
	c.res.Clusters[1].LbPolicy = clusterv3.Cluster_RANDOM
	c.push("2")
	nack := c.waitNack(xds.ClusterType)
	if msg := nack.GetErrorDetail().GetMessage(); !strings.Contains(msg, subset("v2")) {
		t.Errorf("NACK %q, want it to name the cluster", msg)
	}
	c.wantSplit(1000, 90, 10, "after the NACK")
}

// TestIstioRouteToAMissingClusterFailsOnlyItsRequests adds a route to a
// subset with no cluster: its requests fail, naming the cluster; every
// other request is served as before.
func TestIstioRouteToAMissingClusterFailsOnlyItsRequests(t *testing.T) {
	clk := clock.NewMock()
	c := newIstioCase(t, conn.WithClock(clk))
	vh := c.routes().GetVirtualHosts()[0]
	ghost := proto.Clone(vh.GetRoutes()[0]).(*routev3.Route)
	ghost.Name = "ghost"
	ghost.GetMatch().GetHeaders()[0].GetStringMatch().MatchPattern = &matcherv3.StringMatcher_Exact{Exact: "ghost"}
	ghost.GetRoute().ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: subset("v9")}
	vh.Routes = append([]*routev3.Route{ghost}, vh.GetRoutes()...)
	c.push("2")
	// A cluster never received does not exist once its does-not-exist
	// timer fires (gRFC A27), on the channel's mock clock: advanced by the
	// timeout until the route's requests fail. Until then the new routes
	// wait for it and the old ones serve.
	c.cp.waitRequest(ctxFor(t), func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.ClusterType && slices.Contains(r.GetResourceNames(), subset("v9"))
	})
	failFast := &http.Client{Transport: &nethttp.Transport{Channel: c.ch}}
	want := fmt.Sprintf("cluster %q does not exist", subset("v9"))
	c.until("the ghost route to fail", func() bool {
		clk.Add(xds.DefaultResourceTimeout)
		_, err := get9080(failFast, "end-user", "ghost")
		return err != nil && strings.Contains(err.Error(), want)
	})
	for range 20 {
		if name, err := get9080(failFast, "end-user", "ghost"); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("ghost request: %q, %v; want an error saying %s", name, err, want)
		}
	}
	c.wantSplit(1000, 90, 10, "beside the missing cluster")
	if got := c.count(100, "end-user", "jason"); got["v3"] != 100 {
		t.Errorf("beside the missing cluster, jason went to %v", got)
	}
}
