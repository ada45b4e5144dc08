package xds_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// testNode is the node id every test's bootstrap and snapshots use.
const testNode = "lbkit-test"

const debugCP = false

// controlPlane is a real go-control-plane management server (its
// snapshot cache and ADS server) on a loopback port the test owns. It
// records every request it receives.
type controlPlane struct {
	t     testing.TB
	cache cachev3.SnapshotCache
	addr  string

	mu       sync.Mutex
	srv      *grpc.Server
	requests []*discoveryv3.DiscoveryRequest
	arrived  chan struct{} // closed and replaced at each request
	streams  int
}

// startControlPlane starts a management server on a free loopback port
// and stops it when the test ends.
func startControlPlane(t testing.TB) *controlPlane {
	t.Helper()
	cp := &controlPlane{t: t, cache: cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil), arrived: make(chan struct{})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cp.addr = lis.Addr().String()
	cp.serve(lis)
	t.Cleanup(cp.stop)
	return cp
}

// serve starts the gRPC server on lis.
func (cp *controlPlane) serve(lis net.Listener) {
	cb := serverv3.CallbackFuncs{
		StreamOpenFunc: func(context.Context, int64, string) error {
			cp.mu.Lock()
			cp.streams++
			cp.mu.Unlock()
			return nil
		},
		StreamResponseFunc: func(_ context.Context, _ int64, req *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			if debugCP {
				fmt.Printf("RESP %s v=%s n=%d nonce=%s\n", resp.GetTypeUrl(), resp.GetVersionInfo(), len(resp.GetResources()), resp.GetNonce())
			}
		},
		StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
			if debugCP {
				fmt.Printf("REQ %s v=%s names=%v nonce=%s err=%v\n", req.GetTypeUrl(), req.GetVersionInfo(), req.GetResourceNames(), req.GetResponseNonce(), req.GetErrorDetail())
			}
			cp.mu.Lock()
			cp.requests = append(cp.requests, req)
			close(cp.arrived)
			cp.arrived = make(chan struct{})
			cp.mu.Unlock()
			return nil
		},
	}
	xds := serverv3.NewServer(context.Background(), cp.cache, cb)
	srv := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, xds)
	cp.mu.Lock()
	cp.srv = srv
	cp.mu.Unlock()
	go srv.Serve(lis) //nolint:errcheck // Serve returns when the test stops it
}

// stop stops the server, closing every stream.
func (cp *controlPlane) stop() {
	cp.mu.Lock()
	srv := cp.srv
	cp.srv = nil
	cp.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

// restart serves again on the same address.
func (cp *controlPlane) restart() {
	cp.t.Helper()
	lis, err := net.Listen("tcp", cp.addr)
	if err != nil {
		cp.t.Fatalf("listening again on %s: %v", cp.addr, err)
	}
	cp.serve(lis)
}

// set publishes a snapshot of version v.
func (cp *controlPlane) set(v string, clusters []*clusterv3.Cluster, assignments []*endpointv3.ClusterLoadAssignment) {
	cp.t.Helper()
	res := map[resourcev3.Type][]types.Resource{resourcev3.ClusterType: nil, resourcev3.EndpointType: nil}
	for _, c := range clusters {
		res[resourcev3.ClusterType] = append(res[resourcev3.ClusterType], c)
	}
	for _, a := range assignments {
		res[resourcev3.EndpointType] = append(res[resourcev3.EndpointType], a)
	}
	snap, err := cachev3.NewSnapshot(v, res)
	if err != nil {
		cp.t.Fatal(err)
	}
	if err := cp.cache.SetSnapshot(context.Background(), testNode, snap); err != nil {
		cp.t.Fatal(err)
	}
}

// waitRequest waits until the server has received a request that match
// accepts, and returns it.
func (cp *controlPlane) waitRequest(ctx context.Context, match func(*discoveryv3.DiscoveryRequest) bool) *discoveryv3.DiscoveryRequest {
	cp.t.Helper()
	seen := 0
	for {
		cp.mu.Lock()
		reqs, arrived := cp.requests[seen:], cp.arrived
		seen = len(cp.requests)
		cp.mu.Unlock()
		for _, r := range reqs {
			if match(r) {
				return r
			}
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			cp.t.Fatalf("the management server received no such request: %v", ctx.Err())
			return nil
		}
	}
}

// streamCount returns how many ADS streams were opened.
func (cp *controlPlane) streamCount() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.streams
}

// edsCluster returns an EDS cluster whose endpoints come over ADS.
func edsCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		},
	}
}

// locality is one locality of a test assignment.
type locality struct {
	zone     string
	priority uint32
	weight   uint32
	addrs    []string // host:port
	weights  []uint32 // per address; nil for none
}

// assignment returns a ClusterLoadAssignment of the localities.
func assignment(name string, ls ...locality) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	for _, l := range ls {
		le := &endpointv3.LocalityLbEndpoints{
			Locality:            &corev3.Locality{Region: "r", Zone: l.zone},
			Priority:            l.priority,
			LoadBalancingWeight: wrapperspb.UInt32(l.weight),
		}
		for i, a := range l.addrs {
			host, port, err := net.SplitHostPort(a)
			if err != nil {
				panic(err)
			}
			var p uint32
			fmt.Sscan(port, &p)
			ep := &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: p},
				}}},
			}}}
			if l.weights != nil {
				ep.LoadBalancingWeight = wrapperspb.UInt32(l.weights[i])
			}
			le.LbEndpoints = append(le.LbEndpoints, ep)
		}
		cla.Endpoints = append(cla.Endpoints, le)
	}
	return cla
}
