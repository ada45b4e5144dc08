package xds_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/clusterimpl"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/dns"
)

// Short names for the clusters of these tests.
var (
	aggregateCluster  = controlplane.AggregateCluster
	logicalDNSCluster = controlplane.LogicalDNSCluster
)

// subscribed matches a CDS request naming every one of names.
func subscribed(names ...string) func(*discoveryv3.DiscoveryRequest) bool {
	return func(r *discoveryv3.DiscoveryRequest) bool {
		if r.GetTypeUrl() != xds.ClusterType {
			return false
		}
		for _, n := range names {
			if !slices.Contains(r.GetResourceNames(), n) {
				return false
			}
		}
		return true
	}
}

// An aggregate cluster's tree has the priorities of its clusters in
// order, the first cluster's first (gRFC A37), each under its own
// cluster's xds_cluster_impl_experimental; the resolver watches every
// cluster of the graph, describes its leaves and logs the fields a
// cluster under the aggregate sets that lbkit ignores.
func TestAggregateClusterConcatenatesItsClustersPriorities(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{aggregateCluster("agg", "primary", "inner"), aggregateCluster("inner", "secondary", "primary"), clusterNamed("primary"), withMaxRequests("secondary", 1024)},
		[]*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("primary"), assignment("secondary", locality{Zone: "s", Weight: 1, Addrs: []string{"10.0.2.1:80"}})})
	logs := &lbtest.Logs{}
	cc, r := follow(t, testBuilder(t, cp.addr), "agg", clock.NewMock(), logs)

	st := cc.NextState(t)
	want := []endpoint{
		{"10.0.0.1:80", "primary/priority-0-0>r/a/", 1},
		{"10.0.0.2:80", "primary/priority-0-0>r/a/", 1},
		{"10.0.1.1:80", "primary/priority-1-0>r/b/", 1},
		{"10.0.2.1:80", "secondary/priority-0-0>r/s/", 1},
	}
	if got := endpoints(st); !slices.Equal(got, want) {
		t.Errorf("endpoints = %v, want %v", got, want)
	}
	for _, s := range []string{
		`"priorities":["primary/priority-0-0","primary/priority-1-0","secondary/priority-0-0"]`,
		`{"xds_cluster_impl_experimental":{"cluster":"primary","maxConcurrentRequests":1024,`,
		`{"xds_cluster_impl_experimental":{"cluster":"secondary","maxConcurrentRequests":1024,`,
	} {
		if !strings.Contains(string(st.ServiceConfig), s) {
			t.Errorf("service config %s lacks %s", st.ServiceConfig, s)
		}
	}
	cp.waitRequest(ctxFor(t), subscribed("agg", "inner", "primary", "secondary"))
	xds.Sync(t, r)
	var leaves string
	for _, f := range r.(resolver.Describer).Describe().Facts {
		if f.Name == "leaf clusters" {
			leaves = f.Value
		}
	}
	if leaves != "primary (EDS primary), secondary (EDS secondary)" {
		t.Errorf("Describe's leaf clusters = %q", leaves)
	}
	// secondary's HIGH threshold is ignored (gRFC A32), and logged.
	if !logged(logs, "the cluster sets fields lbkit ignores") || !logged(logs, "resource=secondary") {
		t.Errorf("no log of secondary's ignored fields: %q", logs.Lines())
	}
}

// A graph deeper than 16 levels, and an aggregate cluster naming only
// itself, are errors naming the resource; nothing is published.
func TestAggregateClusterGraphErrors(t *testing.T) {
	chain := []*clusterv3.Cluster{clusterNamed("leaf")}
	for i := 1; i <= 16; i++ {
		next := "c" + strconv.Itoa(i+1)
		if i == 16 {
			next = "leaf"
		}
		chain = append(chain, aggregateCluster("c"+strconv.Itoa(i), next))
	}
	cp := startControlPlane(t)
	cp.set("1", append(chain, aggregateCluster("self", "self")), []*endpointv3.ClusterLoadAssignment{assignment("leaf", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80"}})})
	b := testBuilder(t, cp.addr)
	for _, tc := range []struct{ root, want string }{
		{"c1", `xds: cluster "leaf": the aggregate cluster graph from "c1" is deeper than 16 levels (gRFC A37)`},
		{"self", `xds: cluster "self": the aggregate cluster graph has no EDS or LOGICAL_DNS cluster`},
	} {
		cc, _ := follow(t, b, tc.root, clock.NewMock(), &lbtest.Logs{})
		if err := cc.NextError(t); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.root, err, tc.want)
		}
	}
	// 15 aggregate levels over the leaf are within the limit.
	cc, _ := follow(t, b, "c2", clock.NewMock(), &lbtest.Logs{})
	if got := endpoints(cc.NextState(t)); len(got) != 1 || got[0].path != "leaf/priority-0-0>r/a/" {
		t.Errorf("c2: endpoints %v", got)
	}
}

// A cluster of the graph that does not exist fails the channel with a
// reason naming it (gRFC A37), once the does-not-exist timer fires.
func TestAggregateClusterWithAMissingCluster(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{aggregateCluster("agg", "primary", "gone"), clusterNamed("primary")},
		[]*endpointv3.ClusterLoadAssignment{assignment("primary", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.1:80"}})})
	mock := clock.NewMock()
	cc, r := follow(t, testBuilder(t, cp.addr), "agg", mock, &lbtest.Logs{})
	cp.waitRequest(ctxFor(t), subscribed("agg", "primary", "gone"))
	// The does-not-exist timer starts once the request is sent, which the
	// server may see first: wait for the timer before advancing the clock.
	xds.WaitClient(t, r, func(v xds.ClientView) bool { return slices.Contains(v.Waiting, "cluster/gone") })
	if n := cc.Events.Pending(); n != 0 {
		t.Fatalf("%d updates before every cluster is known, want none (gRFC A37)", n)
	}
	lbtest.AdvanceSerializers(t, mock, xds.DefaultResourceTimeout, xds.SerializerOf(r))
	st := cc.NextState(t)
	if len(st.Addresses) != 0 || st.Degraded == nil || !strings.Contains(st.Degraded.Error(), `cluster "gone" of the aggregate cluster graph from "agg" does not exist`) {
		t.Errorf("state %v, Degraded %v", st.Addresses, st.Degraded)
	}
}

// failoverServers starts the backends of the failover test and a channel
// following xds-cluster:///root.
func failoverChannel(t *testing.T, cp *testPlane, root string) *http.Client {
	t.Helper()
	fast := backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond}
	ch, err := conn.New("xds-cluster:///"+root, conn.WithResolver(testBuilder(t, cp.addr, xds.WithBackoff(fast))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// until sends requests until one reaches want, then n more that must all
// reach want.
func until(t *testing.T, client *http.Client, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		name, err := get(client)
		if err != nil {
			t.Fatal(err)
		}
		if name == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request reached %s within %v", want, hangGuard)
		}
	}
	for i := range n {
		if name, err := get(client); err != nil || name != want {
			t.Fatalf("request %d after the switch: %q, %v; want %s", i, name, err, want)
		}
	}
}

// An aggregate cluster [primary, secondary] over real HTTP backends sends
// its traffic to primary; when primary's assignment has no endpoint the
// traffic fails over to secondary, and it comes back with primary's
// endpoints (gRFC A37's failover, issue 31's proof).
func TestAggregateClusterFailsOverBetweenClusters(t *testing.T) {
	addrs := namedServers(t, "primary", "secondary")
	cp := startControlPlane(t)
	clusters := []*clusterv3.Cluster{aggregateCluster("agg", "primary", "secondary"), clusterNamed("primary"), clusterNamed("secondary")}
	secondary := assignment("secondary", locality{Zone: "s", Weight: 1, Addrs: addrs[1:]})
	withPrimary := []*endpointv3.ClusterLoadAssignment{assignment("primary", locality{Zone: "p", Weight: 1, Addrs: addrs[:1]}), secondary}
	cp.set("1", clusters, withPrimary)
	client := failoverChannel(t, cp, "agg")

	until(t, client, "primary", 20)
	cp.set("2", clusters, []*endpointv3.ClusterLoadAssignment{assignment("primary"), secondary})
	until(t, client, "secondary", 20)
	cp.set("3", clusters, withPrimary)
	until(t, client, "primary", 20)
}

// A LOGICAL_DNS cluster serves the addresses DNS gives for its host,
// alone or as an aggregate cluster's fallback from an EDS cluster
// without endpoints (A37's EDS-to-DNS fallback).
func TestLogicalDNSClusterServes(t *testing.T) {
	addrs := namedServers(t, "dns")
	_, portText, err := net.SplitHostPort(addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.ParseUint(portText, 10, 16)
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{
		logicalDNSCluster("by-ip", "127.0.0.1", uint32(port)),
		logicalDNSCluster("by-name", "localhost", uint32(port)),
		clusterNamed("empty"),
		aggregateCluster("fallback", "empty", "by-name"),
	}, []*endpointv3.ClusterLoadAssignment{assignment("empty")})
	for _, root := range []string{"by-ip", "by-name", "fallback"} {
		t.Run(root, func(t *testing.T) {
			until(t, failoverChannel(t, cp, root), "dns", 5)
		})
	}
}

// fakeDNS answers lookups of host names from a table; a name not in it
// fails. It counts the lookups.
type fakeDNS struct {
	mu      sync.Mutex
	answers map[string]string
	lookups int
}

func (f *fakeDNS) set(host, ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[host] = ip
}

func (f *fakeDNS) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	ip, ok := f.answers[host]
	if !ok {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return []netip.Addr{netip.MustParseAddr(ip)}, nil
}

func (f *fakeDNS) builder(t *testing.T) *dns.Builder {
	t.Helper()
	b, err := dns.NewBuilder(dns.WithLookup(f.lookup), dns.WithMinResolutionInterval(0), dns.WithPollInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A LOGICAL_DNS cluster's addresses are one locality under pick_first,
// and each ResolveNow resolves the host again (gRFC A37).
func TestLogicalDNSClusterResolvesAgainOnResolveNow(t *testing.T) {
	f := &fakeDNS{answers: map[string]string{"svc.example": "10.0.0.1"}}
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{logicalDNSCluster("d", "svc.example", 8080)}, nil)
	cc, r := follow(t, testBuilder(t, cp.addr, xds.WithDNS(f.builder(t))), "d", clock.NewMock(), &lbtest.Logs{})

	st := cc.NextState(t)
	if got := endpoints(st); !slices.Equal(got, []endpoint{{"10.0.0.1:8080", "d/priority-0-0", 1}}) {
		t.Errorf("endpoints = %v", got)
	}
	if !strings.Contains(string(st.ServiceConfig), `"childPolicy":[{"pick_first":{}}]`) {
		t.Errorf("service config %s: want pick_first under the cluster's xds_cluster_impl_experimental", st.ServiceConfig)
	}
	f.set("svc.example", "10.0.0.2")
	r.ResolveNow()
	if got := endpoints(cc.NextState(t)); !slices.Equal(got, []endpoint{{"10.0.0.2:8080", "d/priority-0-0", 1}}) {
		t.Errorf("after ResolveNow: endpoints = %v", got)
	}
}

// A LOGICAL_DNS cluster whose first resolution fails has no endpoints,
// so the aggregate cluster's next cluster serves (gRFC A37).
func TestAggregateClusterSkipsAFailedDNSCluster(t *testing.T) {
	f := &fakeDNS{answers: map[string]string{}}
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{aggregateCluster("agg", "d", "s"), logicalDNSCluster("d", "nowhere.example", 80), clusterNamed("s")},
		[]*endpointv3.ClusterLoadAssignment{assignment("s", locality{Zone: "s", Weight: 1, Addrs: []string{"10.0.2.1:80"}})})
	cc, _ := follow(t, testBuilder(t, cp.addr, xds.WithDNS(f.builder(t))), "agg", clock.NewMock(), &lbtest.Logs{})
	st := cc.NextState(t)
	if got := endpoints(st); !slices.Equal(got, []endpoint{{"10.0.2.1:80", "s/priority-0-0>r/s/", 1}}) || st.Degraded != nil {
		t.Errorf("endpoints = %v, Degraded %v", got, st.Degraded)
	}
}

// When the aggregate cluster drops a cluster, its CDS and EDS watches end
// and its priorities leave the tree; when the root becomes an EDS
// cluster, the graph ends.
func TestAggregateClusterFollowsGraphChanges(t *testing.T) {
	cp := startControlPlane(t)
	eds := []*endpointv3.ClusterLoadAssignment{
		assignment("p", locality{Zone: "p", Weight: 1, Addrs: []string{"10.0.0.1:80"}}),
		assignment("s", locality{Zone: "s", Weight: 1, Addrs: []string{"10.0.2.1:80"}}),
		assignment("agg", locality{Zone: "x", Weight: 1, Addrs: []string{"10.0.9.1:80"}}),
	}
	cp.set("1", []*clusterv3.Cluster{aggregateCluster("agg", "p", "s"), clusterNamed("p"), clusterNamed("s")}, eds)
	cc, _ := follow(t, testBuilder(t, cp.addr), "agg", clock.NewMock(), &lbtest.Logs{})
	if got := endpoints(cc.NextState(t)); len(got) != 2 {
		t.Fatalf("endpoints = %v, want p's and s's", got)
	}
	ctx := ctxFor(t)
	cp.set("2", []*clusterv3.Cluster{aggregateCluster("agg", "s"), clusterNamed("p"), clusterNamed("s")}, eds)
	if got := endpoints(cc.NextState(t)); !slices.Equal(got, []endpoint{{"10.0.2.1:80", "s/priority-0-0>r/s/", 1}}) {
		t.Errorf("after dropping p: endpoints = %v", got)
	}
	cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.ClusterType && slices.Equal(r.GetResourceNames(), []string{"agg", "s"})
	})
	cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.EndpointType && slices.Equal(r.GetResourceNames(), []string{"s"})
	})
	cp.set("3", []*clusterv3.Cluster{clusterNamed("agg")}, eds)
	if got := endpoints(cc.NextState(t)); !slices.Equal(got, []endpoint{{"10.0.9.1:80", "priority-0-0>r/x/", 1}}) {
		t.Errorf("agg as an EDS cluster: endpoints = %v", got)
	}
	cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.EndpointType && slices.Equal(r.GetResourceNames(), []string{"agg"})
	})
}

// An aggregate cluster (gRFC A37) over an EDS cluster and a LOGICAL_DNS
// fallback: while the EDS cluster has no endpoint the DNS cluster serves,
// and traffic returns to the EDS cluster once it has one. WithDNS chooses
// how LOGICAL_DNS hosts are resolved (here the dns package's defaults,
// with a 10 s poll interval and floor).
func ExampleWithDNS() {
	addrs, stop := exampleServers("from EDS", "from DNS")
	defer stop()
	cp, err := controlplane.Start("127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cp.Stop()
	host, port, _ := net.SplitHostPort(addrs[1])
	dnsPort, _ := strconv.ParseUint(port, 10, 16)
	clusters := []*clusterv3.Cluster{
		controlplane.AggregateCluster("shop", "shop-eds", "shop-dns"),
		controlplane.EDSCluster("shop-eds"),
		controlplane.LogicalDNSCluster("shop-dns", host, uint32(dnsPort)),
	}
	publish := func(version string, edsAddrs ...string) {
		err := cp.Set(version, clusters, []*endpointv3.ClusterLoadAssignment{
			controlplane.Assignment("shop-eds", controlplane.Locality{Zone: "a", Weight: 1, Addrs: edsAddrs}),
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	publish("1") // the EDS cluster has no endpoint yet

	dnsBuilder, err := dns.NewBuilder(dns.WithPollInterval(10*time.Second), dns.WithMinResolutionInterval(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	boot := &xds.Bootstrap{Servers: []xds.Server{{URI: cp.Addr, Creds: xds.Creds{Type: "insecure"}}}, Node: xds.Node{ID: controlplane.Node}}
	b, err := xds.NewBuilder(xds.WithBootstrap(boot), xds.WithDNS(dnsBuilder))
	if err != nil {
		fmt.Println(err)
		return
	}
	client, closeClient, err := exampleClient("xds-cluster:///shop", b)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeClient()

	name, _ := get(client)
	fmt.Println("EDS empty:", name)
	publish("2", addrs[0])
	fmt.Println("EDS back:", getUntil(client, "from EDS"))
	// Output:
	// EDS empty: from DNS
	// EDS back: from EDS
}

// Under an aggregate cluster each cluster's priorities count in that
// cluster's process-wide counter (gRFC A32 and A37): a request in flight on
// a channel following p directly fills p's limit of 1 for the aggregate
// cluster's channel too.
func TestAggregateClusterCountsInEachClustersCounter(t *testing.T) {
	addrs := namedServers(t, "p", "s")
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{aggregateCluster("agg", "p", "s"), withMaxRequests("p", 1), clusterNamed("s")}, []*endpointv3.ClusterLoadAssignment{
		assignment("p", locality{Zone: "p", Weight: 1, Addrs: addrs[:1]}),
		assignment("s", locality{Zone: "s", Weight: 1, Addrs: addrs[1:]}),
	})
	ctx := ctxFor(t)
	var chans []*conn.Channel
	for _, target := range []string{"xds-cluster:///agg", "xds-cluster:///p"} {
		ch, err := conn.New(target, conn.WithResolver(testBuilder(t, cp.addr)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ch.Close() })
		r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		r.Finish(lb.DoneInfo{})
		chans = append(chans, ch)
	}
	held, err := chans[1].Pick(ctx, conn.PickOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chans[0].Pick(ctx, conn.PickOptions{}); !errors.Is(err, clusterimpl.ErrOverLimit) || !strings.Contains(err.Error(), `cluster "p"`) {
		t.Fatalf("the aggregate's pick while p's one request is in flight elsewhere: %v, want over p's limit", err)
	}
	held.Finish(lb.DoneInfo{})
	r, err := chans[0].Pick(ctx, conn.PickOptions{})
	if err != nil {
		t.Fatalf("after the request ended: %v", err)
	}
	if _, err := chans[1].Pick(ctx, conn.PickOptions{}); !errors.Is(err, clusterimpl.ErrOverLimit) {
		t.Errorf("p's channel while the aggregate's request to p is in flight: %v, want over the limit", err)
	}
	r.Finish(lb.DoneInfo{})
}
