package xds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	pick_firstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	randomv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/random/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hangGuard bounds every wait; no test waits on it to pass.
const hangGuard = 20 * time.Second

// noJitter is gRPC's backoff without its jitter, so that tests know each
// delay.
var noJitter = backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, MaxDelay: 120 * time.Second}

// logged reports whether a line of logs contains substr. Tests look
// only after a barrier that orders the logging before the look.
func logged(logs *lbtest.Logs, substr string) bool {
	return slices.ContainsFunc(logs.Lines(), func(l string) bool { return strings.Contains(l, substr) })
}

// testNode is the node id of every test's bootstrap.
const testNode = controlplane.Node

// Short names for the resources tests publish.
var (
	clusterNamed = controlplane.EDSCluster
	assignment   = controlplane.Assignment
)

type locality = controlplane.Locality

// testPlane wraps a controlplane.Server for tests: it stops with the
// test, and its failures fail the test.
type testPlane struct {
	*controlplane.Server
	t    testing.TB
	addr string
}

func startControlPlane(t testing.TB) *testPlane {
	t.Helper()
	s, err := controlplane.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return &testPlane{Server: s, t: t, addr: s.Addr}
}

func (p *testPlane) set(v string, clusters []*clusterv3.Cluster, assignments []*endpointv3.ClusterLoadAssignment) {
	p.t.Helper()
	if err := p.Set(v, clusters, assignments); err != nil {
		p.t.Fatal(err)
	}
}

func (p *testPlane) stop() { p.Stop() }

func (p *testPlane) restart() {
	p.t.Helper()
	if err := p.Restart(); err != nil {
		p.t.Fatal(err)
	}
}

func (p *testPlane) streamCount() int { return p.Streams() }

func (p *testPlane) waitRequest(ctx context.Context, match func(*discoveryv3.DiscoveryRequest) bool) *discoveryv3.DiscoveryRequest {
	p.t.Helper()
	r := p.WaitRequest(ctx, match)
	if r == nil {
		p.t.Fatalf("the management server received no such request: %v", ctx.Err())
	}
	return r
}

// testBuilder returns a Builder for cp's server with the test node.
func testBuilder(t testing.TB, addr string, opts ...xds.Option) *xds.Builder {
	t.Helper()
	boot := &xds.Bootstrap{Servers: []xds.Server{{URI: addr, Creds: xds.Creds{Type: "insecure"}}}, Node: xds.Node{ID: testNode}}
	b, err := xds.NewBuilder(append([]xds.Option{xds.WithBootstrap(boot), xds.WithBackoff(noJitter)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// follow builds a resolver for cluster and closes it when the test ends.
func follow(t testing.TB, b *xds.Builder, cluster string, clk clock.Clock, logs *lbtest.Logs) (*lbtest.ResolverClientConn, resolver.Resolver) {
	t.Helper()
	cc := &lbtest.ResolverClientConn{}
	r, err := b.Build(resolver.Target{Scheme: xds.ClusterScheme, Endpoint: cluster}, cc, resolver.BuildOptions{
		Clock: clk, Logger: slog.New(logs), Rand: rand.New(rand.NewPCG(1, 2)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return cc, r
}

// endpoint is one published address, for comparisons.
type endpoint struct {
	addr   string
	path   string
	weight uint32
}

func endpoints(st resolver.State) []endpoint {
	var out []endpoint
	for _, a := range st.Addresses {
		p, _ := hierarchy.Get(a)
		w, _ := weight.Get(a)
		out = append(out, endpoint{a.Addr, strings.Join(p, ">"), w})
	}
	return out
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// acked matches the ACK of version v for resources of type url.
func acked(url, v string) func(*discoveryv3.DiscoveryRequest) bool {
	return func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == url && r.GetVersionInfo() == v && r.GetResponseNonce() != "" && r.GetErrorDetail() == nil
	}
}

func twoPriorityAssignment(name string) *endpointv3.ClusterLoadAssignment {
	return assignment(name,
		locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80", "10.0.0.2:80"}},
		locality{Zone: "b", Priority: 1, Weight: 1, Addrs: []string{"10.0.1.1:80"}})
}

func TestFirstSnapshotGivesTheTree(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	cc, _ := follow(t, testBuilder(t, cp.addr), "c1", clock.NewMock(), &lbtest.Logs{})

	st := cc.NextState(t)
	want := []endpoint{
		{"10.0.0.1:80", "priority-0-0>r/a/", 1},
		{"10.0.0.2:80", "priority-0-0>r/a/", 1},
		{"10.0.1.1:80", "priority-1-0>r/b/", 1},
	}
	if got := endpoints(st); !slices.Equal(got, want) {
		t.Errorf("endpoints = %v, want %v", got, want)
	}
	for _, s := range []string{`"priority_experimental"`, `"weighted_target_experimental"`, `"weighted_round_robin"`, `"priorities":["priority-0-0","priority-1-0"]`} {
		if !strings.Contains(string(st.ServiceConfig), s) {
			t.Errorf("service config %s lacks %s", st.ServiceConfig, s)
		}
	}
	ctx := ctxFor(t)
	first := cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool { return r.GetNode() != nil })
	if first.GetNode().GetId() != testNode || first.GetTypeUrl() != xds.ClusterType || !slices.Equal(first.GetResourceNames(), []string{"c1"}) {
		t.Errorf("first request: node %q, type %s, names %v; want %q, the cluster type, [c1]", first.GetNode().GetId(), first.GetTypeUrl(), first.GetResourceNames(), testNode)
	}
	cp.waitRequest(ctx, acked(xds.ClusterType, "1"))
	eds := cp.waitRequest(ctx, acked(xds.EndpointType, "1"))
	if !slices.Equal(eds.GetResourceNames(), []string{"c1"}) {
		t.Errorf("EDS ACK names %v, want [c1]", eds.GetResourceNames())
	}
}

func TestEachSnapshotIsFollowedWithinOneUpdate(t *testing.T) {
	cp := startControlPlane(t)
	cluster := []*clusterv3.Cluster{clusterNamed("c1")}
	cp.set("1", cluster, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	cc, _ := follow(t, testBuilder(t, cp.addr), "c1", clock.NewMock(), &lbtest.Logs{})
	cc.NextState(t)

	steps := []struct {
		name string
		cla  *endpointv3.ClusterLoadAssignment
		want []endpoint
	}{{
		name: "endpoint weights",
		cla: assignment("c1",
			locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80", "10.0.0.2:80"}, Weights: []uint32{3, 1}},
			locality{Zone: "b", Priority: 1, Weight: 1, Addrs: []string{"10.0.1.1:80"}}),
		want: []endpoint{{"10.0.0.1:80", "priority-0-0>r/a/", 3}, {"10.0.0.2:80", "priority-0-0>r/a/", 1}, {"10.0.1.1:80", "priority-1-0>r/b/", 1}},
	}, {
		name: "an endpoint added and one removed",
		cla: assignment("c1",
			locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.2:80", "10.0.0.3:80"}},
			locality{Zone: "b", Priority: 1, Weight: 1, Addrs: []string{"10.0.1.1:80"}}),
		want: []endpoint{{"10.0.0.2:80", "priority-0-0>r/a/", 1}, {"10.0.0.3:80", "priority-0-0>r/a/", 1}, {"10.0.1.1:80", "priority-1-0>r/b/", 1}},
	}, {
		name: "priorities swapped: the children keep their localities' names",
		cla: assignment("c1",
			locality{Zone: "b", Weight: 1, Addrs: []string{"10.0.1.1:80"}},
			locality{Zone: "a", Priority: 1, Weight: 1, Addrs: []string{"10.0.0.2:80", "10.0.0.3:80"}}),
		want: []endpoint{{"10.0.1.1:80", "priority-1-0>r/b/", 1}, {"10.0.0.2:80", "priority-0-0>r/a/", 1}, {"10.0.0.3:80", "priority-0-0>r/a/", 1}},
	}}
	for i, s := range steps {
		cp.set(string(rune('2'+i)), cluster, []*endpointv3.ClusterLoadAssignment{s.cla})
		if got := endpoints(cc.NextState(t)); !slices.Equal(got, s.want) {
			t.Errorf("%s: endpoints = %v, want %v", s.name, got, s.want)
		}
	}
	if n := cc.Events.Pending(); n != 0 {
		t.Errorf("%d more events after the last snapshot: %v", n, cc.Events.Peek())
	}
}

func TestBadResourcesAreNACKedAndTheLastGoodStateKept(t *testing.T) {
	cp := startControlPlane(t)
	good := twoPriorityAssignment("c1")
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{good})
	logs := &lbtest.Logs{}
	cc, _ := follow(t, testBuilder(t, cp.addr), "c1", clock.NewMock(), logs)
	cc.NextState(t)
	ctx := ctxFor(t)

	// An endpoint without a port: the NACK names the field, the version
	// stays the last accepted one.
	bad := assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.9:80"}})
	bad.Endpoints[0].LbEndpoints[0].GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = nil
	cp.set("2", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{bad})
	nack := cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.EndpointType && r.GetErrorDetail() != nil
	})
	if nack.GetVersionInfo() != "1" {
		t.Errorf("NACK version = %q, want the last accepted, 1", nack.GetVersionInfo())
	}
	msg := nack.GetErrorDetail().GetMessage()
	if !strings.Contains(msg, `endpoints "c1"`) || !strings.Contains(msg, "endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value") {
		t.Errorf("NACK detail %q does not name the resource and the field", msg)
	}

	// A cluster lbkit cannot follow: NACKed, the last good one kept.
	static := clusterNamed("c1")
	static.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
	cp.set("3", []*clusterv3.Cluster{static}, []*endpointv3.ClusterLoadAssignment{good})
	nack = cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.ClusterType && r.GetErrorDetail() != nil
	})
	if msg := nack.GetErrorDetail().GetMessage(); !strings.Contains(msg, `cluster "c1"`) || !strings.Contains(msg, "type") {
		t.Errorf("cluster NACK detail %q does not name the resource and the field", msg)
	}
	if nack.GetVersionInfo() != "2" {
		t.Errorf("cluster NACK version = %q, want the last accepted, 2 (version 2's cluster was valid)", nack.GetVersionInfo())
	}
	// The assignment of version 3 (the good one again) is accepted; the
	// state did not change, so nothing is published.
	cp.waitRequest(ctx, acked(xds.EndpointType, "3"))
	if n := cc.Events.Pending(); n != 0 {
		t.Errorf("the resolver published %v while the server sent refused resources", cc.Events.Peek())
	}

	// A good snapshot is followed again.
	cp.set("4", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{
		assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.7:80"}}),
	})
	if got := endpoints(cc.NextState(t)); len(got) != 1 || got[0].addr != "10.0.0.7:80" {
		t.Errorf("after a good snapshot: %v", got)
	}
	cp.waitRequest(ctx, acked(xds.ClusterType, "4"))
}

func TestRemovedClusterFailsWithAClearError(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1"), clusterNamed("c2")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1"), twoPriorityAssignment("c2")})
	cc, _ := follow(t, testBuilder(t, cp.addr), "c1", clock.NewMock(), &lbtest.Logs{})
	cc.NextState(t)

	cp.set("2", []*clusterv3.Cluster{clusterNamed("c2")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c2")})
	st := cc.NextState(t)
	if len(st.Addresses) != 0 {
		t.Errorf("after the cluster's removal: %v, want no address", endpoints(st))
	}
	// The reason travels with the empty state, in the same update.
	if err := st.Degraded; err == nil || !strings.Contains(err.Error(), `cluster "c1" does not exist`) {
		t.Errorf("the empty state's reason %v does not say the cluster does not exist", err)
	}

	// Back again: followed again.
	cp.set("3", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	if st := cc.NextState(t); len(st.Addresses) != 3 {
		t.Errorf("after the cluster came back: %v", endpoints(st))
	}
}

func TestResolversShareOneStreamPerServer(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1"), clusterNamed("c2")}, []*endpointv3.ClusterLoadAssignment{
		assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80"}}),
		assignment("c2", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.2:80"}}),
	})
	b := testBuilder(t, cp.addr)
	clk := clock.NewMock()
	cc1, r1 := follow(t, b, "c1", clk, &lbtest.Logs{})
	cc2, _ := follow(t, b, "c2", clk, &lbtest.Logs{})
	if got := endpoints(cc1.NextState(t)); got[0].addr != "10.0.0.1:80" {
		t.Errorf("c1: %v", got)
	}
	if got := endpoints(cc2.NextState(t)); got[0].addr != "10.0.0.2:80" {
		t.Errorf("c2: %v", got)
	}
	ctx := ctxFor(t)
	cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.EndpointType && slices.Equal(r.GetResourceNames(), []string{"c1", "c2"})
	})
	if n := cp.streamCount(); n != 1 {
		t.Errorf("%d ADS streams for two resolvers of one builder, want 1", n)
	}

	// Closing one unsubscribes its cluster; the other keeps following.
	r1.Close()
	cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.ClusterType && slices.Equal(r.GetResourceNames(), []string{"c2"})
	})
	cp.set("2", []*clusterv3.Cluster{clusterNamed("c2")}, []*endpointv3.ClusterLoadAssignment{
		assignment("c2", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.3:80"}}),
	})
	if got := endpoints(cc2.NextState(t)); got[0].addr != "10.0.0.3:80" {
		t.Errorf("c2 after c1 closed: %v", got)
	}
	if n := cc1.Events.Pending(); n != 0 {
		t.Errorf("a closed resolver reported %v", cc1.Events.Peek())
	}
}

func TestTargetMustNameAClusterOrAListener(t *testing.T) {
	b := testBuilder(t, "127.0.0.1:1")
	for _, tc := range []struct {
		target resolver.Target
		form   string
	}{
		{resolver.Target{Scheme: xds.ClusterScheme}, "xds-cluster:///CLUSTER"},
		{resolver.Target{Scheme: xds.ClusterScheme, Authority: "td.example.com", Endpoint: "c1"}, "xds-cluster:///CLUSTER"},
		{resolver.Target{Scheme: xds.Scheme}, "xds:///LISTENER"},
		{resolver.Target{Scheme: xds.Scheme, Authority: "td.example.com", Endpoint: "l1"}, "xds:///LISTENER"},
	} {
		if _, err := b.Build(tc.target, &lbtest.ResolverClientConn{}, resolver.BuildOptions{}); err == nil || !strings.Contains(err.Error(), tc.form) {
			t.Errorf("Build(%v): err = %v, want one showing %s", tc.target, err, tc.form)
		}
	}
}

func TestSnapshotFloodEndsOnTheLast(t *testing.T) {
	cp := startControlPlane(t)
	cluster := []*clusterv3.Cluster{clusterNamed("c1")}
	at := func(i int) *endpointv3.ClusterLoadAssignment {
		return assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{fmt.Sprintf("10.0.%d.%d:80", i/250, i%250+1)}})
	}
	cp.set("0", cluster, []*endpointv3.ClusterLoadAssignment{at(0)})
	cc, _ := follow(t, testBuilder(t, cp.addr), "c1", clock.NewMock(), &lbtest.Logs{})
	cc.NextState(t)
	const n = 300
	for i := 1; i <= n; i++ {
		cp.set(strconv.Itoa(i), cluster, []*endpointv3.ClusterLoadAssignment{at(i)})
	}
	cp.waitRequest(ctxFor(t), acked(xds.EndpointType, strconv.Itoa(n)))
	// Every state published is one of the snapshots, in order, and the
	// last is the last snapshot's.
	want := fmt.Sprintf("10.0.%d.%d:80", n/250, n%250+1)
	last := ""
	for last != want {
		st := cc.NextState(t)
		if len(st.Addresses) != 1 {
			t.Fatalf("state %v, want one address", endpoints(st))
		}
		last = st.Addresses[0].Addr
	}
	if n := cc.Events.Pending(); n != 0 {
		t.Errorf("%d events after the last snapshot's state: %v", n, cc.Events.Peek())
	}
}

func TestCloseWhileTheServerNeverAnswers(t *testing.T) {
	// A listener that accepts and never speaks HTTP/2: the stream hangs in
	// its handshake.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := lis.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	cc := &lbtest.ResolverClientConn{}
	r, err := testBuilder(t, lis.Addr().String()).Build(resolver.Target{Scheme: xds.ClusterScheme, Endpoint: "c1"}, cc, resolver.BuildOptions{Clock: clock.NewMock()})
	if err != nil {
		t.Fatal(err)
	}
	var c net.Conn
	select {
	case c = <-accepted:
	case <-time.After(hangGuard):
		t.Fatal("the client never connected")
	}
	defer c.Close()
	done := make(chan struct{})
	go func() {
		r.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("Close hangs while the stream is connecting")
	}
	if n := cc.Events.Pending(); n != 0 {
		t.Logf("events before Close: %v", cc.Events.Peek())
	}
}

func TestClusterPoliciesReachTheTree(t *testing.T) {
	cp := startControlPlane(t)
	c := clusterNamed("c1")
	c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: wrapperspb.UInt32(3)}}
	c.OutlierDetection = &clusterv3.OutlierDetection{Interval: durationpb.New(5 * time.Second)}
	cp.set("1", []*clusterv3.Cluster{c}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	cc, _ := follow(t, testBuilder(t, cp.addr), "c1", clock.NewMock(), &lbtest.Logs{})
	sc := string(cc.NextState(t).ServiceConfig)
	for _, s := range []string{`{"least_request_experimental":{"choiceCount":3}}`, `"outlier_detection_experimental"`, `"interval":"5s"`} {
		if !strings.Contains(sc, s) {
			t.Errorf("service config lacks %s:\n%s", s, sc)
		}
	}
	if strings.Count(sc, `"outlier_detection_experimental"`) != 2 {
		t.Errorf("want outlier detection once per priority:\n%s", sc)
	}
	if _, err := lb.ParseLoadBalancingConfig(json.RawMessage(sc[len(`{"loadBalancingConfig":`) : len(sc)-1])); err != nil {
		t.Errorf("the tree does not parse: %v", err)
	}

	// Switching the cluster to a policy lbkit lacks is a NACK naming the
	// field; the tree stays.
	random := clusterNamed("c1")
	random.LbPolicy = clusterv3.Cluster_RANDOM
	cp.set("2", []*clusterv3.Cluster{random}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	nack := cp.waitRequest(ctxFor(t), func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.ClusterType && r.GetErrorDetail() != nil
	})
	if msg := nack.GetErrorDetail().GetMessage(); !strings.Contains(msg, "lb_policy: RANDOM is not supported") {
		t.Errorf("NACK detail %q", msg)
	}
	cp.waitRequest(ctxFor(t), acked(xds.EndpointType, "2"))
	if n := cc.Events.Pending(); n != 0 {
		t.Errorf("published %v after a refused cluster", cc.Events.Peek())
	}
}

// TestLoadBalancingPolicyReachesTheTree: a cluster whose
// load_balancing_policy lists Random, which lbkit
// skips (gRFC A52), then PickFirst gives each priority a pick_first over
// all its endpoints, with no locality layer, and the skipped entry is
// logged; a list with nothing lbkit supports is NACKed naming the types.
func TestLoadBalancingPolicyReachesTheTree(t *testing.T) {
	cp := startControlPlane(t)
	c := clusterNamed("c1")
	c.LoadBalancingPolicy = lbPolicy(&randomv3.Random{}, &pick_firstv3.PickFirst{ShuffleAddressList: true})
	cp.set("1", []*clusterv3.Cluster{c}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	logs := &lbtest.Logs{}
	cc, _ := follow(t, testBuilder(t, cp.addr), "c1", clock.NewMock(), logs)
	st := cc.NextState(t)
	want := `{"loadBalancingConfig":[{"xds_cluster_impl_experimental":{"cluster":"c1","maxConcurrentRequests":1024,"childPolicy":[{"priority_experimental":{"children":{` +
		`"priority-0-0":{"config":[{"pick_first":{"shuffleAddressList":true}}]},` +
		`"priority-1-0":{"config":[{"pick_first":{"shuffleAddressList":true}}]}},` +
		`"priorities":["priority-0-0","priority-1-0"]}}]}}]}`
	if got := string(st.ServiceConfig); got != want {
		t.Errorf("service config:\n got %s\nwant %s", got, want)
	}
	wantEndpoints := []endpoint{{"10.0.0.1:80", "priority-0-0", 1}, {"10.0.0.2:80", "priority-0-0", 1}, {"10.0.1.1:80", "priority-1-0", 1}}
	if got := endpoints(st); !slices.Equal(got, wantEndpoints) {
		t.Errorf("endpoints = %v, want %v", got, wantEndpoints)
	}
	sc := string(st.ServiceConfig)
	if _, err := lb.ParseLoadBalancingConfig(json.RawMessage(sc[len(`{"loadBalancingConfig":`) : len(sc)-1])); err != nil {
		t.Errorf("the tree does not parse: %v", err)
	}
	// The warning was logged before the state was published.
	if !logged(logs, "load_balancing_policy.policies[0].typed_extension_config.typed_config: skipped (gRFC A52)") {
		t.Errorf("the skipped policy was not logged:\n%s", logs)
	}

	// Nothing supported left: a NACK naming the types; the tree stays.
	c = clusterNamed("c1")
	c.LoadBalancingPolicy = lbPolicy(&randomv3.Random{})
	cp.set("2", []*clusterv3.Cluster{c}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	nack := cp.waitRequest(ctxFor(t), func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.ClusterType && r.GetErrorDetail() != nil
	})
	if msg := nack.GetErrorDetail().GetMessage(); !strings.Contains(msg, "load_balancing_policy.policies: no policy lbkit supports (gRFC A52): skipped") ||
		!strings.Contains(msg, "Random") {
		t.Errorf("NACK detail %q", msg)
	}
	cp.waitRequest(ctxFor(t), acked(xds.EndpointType, "2"))
	if n := cc.Events.Pending(); n != 0 {
		t.Errorf("published %v after a refused cluster", cc.Events.Peek())
	}
}

func TestBuildersShareStreamsAcrossTheProcess(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	clk := clock.NewMock()
	// Two Builders made alike share one stream; a third with another
	// resource timeout has its own.
	cc1, _ := follow(t, testBuilder(t, cp.addr), "c1", clk, &lbtest.Logs{})
	cc2, _ := follow(t, testBuilder(t, cp.addr), "c1", clk, &lbtest.Logs{})
	cc1.NextState(t)
	cc2.NextState(t)
	if n := cp.streamCount(); n != 1 {
		t.Errorf("%d streams for two alike builders, want 1", n)
	}
	cc3, _ := follow(t, testBuilder(t, cp.addr, xds.WithResourceTimeout(time.Minute)), "c1", clk, &lbtest.Logs{})
	cc3.NextState(t)
	if n := cp.streamCount(); n != 2 {
		t.Errorf("%d streams after a builder with other options, want 2", n)
	}
}

func TestChannelsWithRealClocksShareAStream(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	b := testBuilder(t, cp.addr)
	for range 3 {
		ch, err := conn.New("xds-cluster:///c1", conn.WithResolver(b), conn.WithDialer(standIn{}))
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		if _, err := ch.Pick(ctxFor(t), conn.PickOptions{WaitForReady: true}); err != nil {
			t.Fatal(err)
		}
	}
	if n := cp.streamCount(); n != 1 {
		t.Errorf("%d streams for three channels, want 1", n)
	}
}

// TestValidResourcesOfANACKedResponseAreUsed: one CDS response with a
// changed valid cluster and an invalid one. The valid one is used (gRFC
// A46), the invalid one keeps its last good value, and the NACK names only
// the invalid one.
func TestValidResourcesOfANACKedResponseAreUsed(t *testing.T) {
	cp := startControlPlane(t)
	clas := []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1"), twoPriorityAssignment("c2")}
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1"), clusterNamed("c2")}, clas)
	b := testBuilder(t, cp.addr)
	clk := clock.NewMock()
	cc1, _ := follow(t, b, "c1", clk, &lbtest.Logs{})
	cc2, _ := follow(t, b, "c2", clk, &lbtest.Logs{})
	cc1.NextState(t)
	cc2.NextState(t)

	lr := clusterNamed("c1")
	lr.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	bad := clusterNamed("c2")
	bad.LbPolicy = clusterv3.Cluster_RANDOM
	cp.set("2", []*clusterv3.Cluster{lr, bad}, clas)
	if sc := string(cc1.NextState(t).ServiceConfig); !strings.Contains(sc, "least_request_experimental") {
		t.Errorf("c1 did not follow its valid change: %s", sc)
	}
	nack := cp.waitRequest(ctxFor(t), func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.ClusterType && r.GetErrorDetail() != nil
	})
	if msg := nack.GetErrorDetail().GetMessage(); !strings.Contains(msg, `cluster "c2"`) || strings.Contains(msg, `cluster "c1"`) {
		t.Errorf("NACK detail %q, want c2 named alone", msg)
	}
	if n := cc2.Events.Pending(); n != 0 {
		t.Errorf("c2 published %v for a refused cluster", cc2.Events.Peek())
	}
}

// TestIgnoreResourceDeletionKeepsTheCluster: with the server feature
// ignore_resource_deletion (gRFC A53), a cluster the server stops sending
// stays in use, and the client says so.
func TestIgnoreResourceDeletionKeepsTheCluster(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	boot, err := xds.ParseBootstrap([]byte(`{"xds_servers": [{"server_uri": "` + cp.addr + `", "channel_creds": [{"type": "insecure"}],
	  "server_features": ["ignore_resource_deletion"]}], "node": {"id": "` + testNode + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := xds.NewBuilder(xds.WithBootstrap(boot), xds.WithBackoff(noJitter))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lbtest.Logs{}
	cc, r := follow(t, b, "c1", clock.NewMock(), logs)
	cc.NextState(t)
	cp.set("2", nil, nil)
	// The ACK is built after the response is handled.
	cp.waitRequest(ctxFor(t), acked(xds.ClusterType, "2"))
	xds.Sync(t, r)
	if !logged(logs, "keeping it (ignore_resource_deletion)") {
		t.Errorf("the kept cluster was not logged:\n%s", logs)
	}
	if n := cc.Events.Pending(); n != 0 {
		t.Errorf("published %v after a deletion the server asked to ignore", cc.Events.Peek())
	}
}
