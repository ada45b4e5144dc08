package grpcbench_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcxds "google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/adapters/xds/internal/cputime"
	"github.com/lbkit/lbkit/conn"
)

// The snapshot both clients read: the listener "bench" (grpc-go's
// resolver starts from LDS) routes to the cluster "bench" (lbkit's starts
// from CDS), whose load_balancing_policy names the observer (gRFC A52) and
// whose endpoints are the assignment "bench".
const target = "bench"

// snapshot holds the resources of every update but the assignment.
type snapshot struct {
	listeners []*listenerv3.Listener
	clusters  []*clusterv3.Cluster
}

func newSnapshot(tb testing.TB) snapshot {
	tb.Helper()
	lis, err := controlplane.APIListener(target, target)
	if err != nil {
		tb.Fatal(err)
	}
	ts, err := anypb.New(&xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/" + observerName, Value: &structpb.Struct{}})
	if err != nil {
		tb.Fatal(err)
	}
	cluster := controlplane.EDSCluster(target)
	cluster.LoadBalancingPolicy = &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{{
		TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: observerName, TypedConfig: ts},
	}}}
	return snapshot{listeners: []*listenerv3.Listener{lis}, clusters: []*clusterv3.Cluster{cluster}}
}

// plane is a control plane and the snapshot it serves.
type plane struct {
	*controlplane.Server
	snap snapshot
}

func startPlane(tb testing.TB, first *endpointv3.ClusterLoadAssignment) *plane {
	tb.Helper()
	s, err := controlplane.Start("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	p := &plane{Server: s, snap: newSnapshot(tb)}
	p.set(tb, "0", first)
	return p
}

func (p *plane) set(tb testing.TB, v string, cla *endpointv3.ClusterLoadAssignment) {
	tb.Helper()
	if err := p.SetWithListeners(v, p.snap.listeners, p.snap.clusters, []*endpointv3.ClusterLoadAssignment{cla}); err != nil {
		tb.Fatal(err)
	}
}

// client is one xDS client under measurement, following target on a
// control plane: its observers report to seen.
type client struct {
	seen  chan string
	close func()
}

// startLBKit follows target with lbkit: an xDS resolver on its own
// builder (its own ADS client) in a channel, started at once.
func startLBKit(tb testing.TB, addr string) client {
	tb.Helper()
	seen := subscribe(tb)
	boot := &xds.Bootstrap{Servers: []xds.Server{{URI: addr, Creds: xds.Creds{Type: "insecure"}}}, Node: xds.Node{ID: controlplane.Node}}
	b, err := xds.NewBuilder(xds.WithBootstrap(boot))
	if err != nil {
		tb.Fatal(err)
	}
	ch, err := conn.New("xds-cluster:///"+target, conn.WithResolver(b))
	if err != nil {
		tb.Fatal(err)
	}
	ch.Connect()
	return client{seen: seen, close: func() { ch.Close() }}
}

// startGRPC follows target with grpc-go: its xds resolver (its own xDS
// client, from the bootstrap given) in a grpc.ClientConn, started at once.
func startGRPC(tb testing.TB, addr string) client {
	tb.Helper()
	seen := subscribe(tb)
	boot := fmt.Sprintf(`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}], "node": {"id": %q}}`, addr, controlplane.Node)
	res, err := grpcxds.NewXDSResolverWithConfigForTesting([]byte(boot))
	if err != nil {
		tb.Fatal(err)
	}
	cc, err := grpc.NewClient("xds:///"+target, grpc.WithResolvers(res), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	cc.Connect()
	return client{seen: seen, close: func() { cc.Close() }}
}

// waitFor returns once the observer of priority 0 has published a picker
// of address set set, or fails tb after a minute (a guard against hangs).
func (c client) waitFor(tb testing.TB, set int) {
	tb.Helper()
	prefix := "10." + strconv.Itoa(set*64) + "."
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for {
		select {
		case a := <-c.seen:
			if len(a) > len(prefix) && a[:len(prefix)] == prefix && controlplane.BigAssignmentPriority(a) == 0 {
				return
			}
		case <-timeout.C:
			tb.Fatalf("no picker of address set %d within a minute", set)
		}
	}
}

// measure follows the assignment through n updates, each swapping the
// address set, timing them when tb is a *testing.B.
func measure(tb testing.TB, endpoints int, start func(testing.TB, string) client) {
	sets := []*endpointv3.ClusterLoadAssignment{
		controlplane.BigAssignment(target, endpoints, 0),
		controlplane.BigAssignment(target, endpoints, 1),
	}
	p := startPlane(tb, sets[0])
	c := start(tb, p.Addr)
	defer c.close()
	c.waitFor(tb, 0)
	version := 0
	update := func() {
		version++
		p.set(tb, strconv.Itoa(version), sets[version%2])
		c.waitFor(tb, version%2)
	}
	if b, ok := tb.(*testing.B); ok {
		b.ReportAllocs()
		defer cputime.Start().Report(b)
		for b.Loop() {
			update()
		}
		return
	}
	for range 3 {
		update()
	}
}

// BenchmarkXDSClients10k times a 10,000-endpoint EDS update from the
// server's snapshot to the picker of the new endpoints in priority 0:
// impl=lbkit through lbkit's xDS resolver and policy tree in a channel,
// impl=grpc-go through grpc-go's xds resolver and balancer tree in a
// grpc.ClientConn. Both run the same observer as the leaf, so the leaves
// cost the same: SubConns made and shut down, never connected. The
// in-process server's work and allocations are counted in both. Besides
// the wall time each reports the process's CPU time per update
// (cpu-ns/op), which a loaded machine does not stretch.
func BenchmarkXDSClients10k(b *testing.B) {
	b.Run("impl=lbkit", func(b *testing.B) { measure(b, 10_000, startLBKit) })
	b.Run("impl=grpc-go", func(b *testing.B) { measure(b, 10_000, startGRPC) })
}

// The benchmark's setup works for both clients: each sees the first
// assignment and three swaps of the address set, and nothing outlives it.
func TestBothClientsFollowTheUpdates(t *testing.T) {
	defer goleak.VerifyNone(t)
	t.Run("impl=lbkit", func(t *testing.T) { measure(t, 2_000, startLBKit) })
	t.Run("impl=grpc-go", func(t *testing.T) { measure(t, 2_000, startGRPC) })
}

// subscribe makes a channel the observers report to until tb ends.
func subscribe(tb testing.TB) chan string {
	seen := make(chan string, 1024)
	observers.set(seen)
	tb.Cleanup(func() { observers.set(nil) })
	return seen
}
