// Package controlplane runs a real go-control-plane management server (its
// snapshot cache and ADS server) on loopback for lbkit's xDS tests,
// benchmarks and demo, and builds the Envoy resources they publish.
package controlplane

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Node is the node id the server publishes snapshots for: bootstraps
// that follow it use this id.
const Node = "lbkit-test"

// Server is a real go-control-plane management server (its snapshot
// cache and ADS server) on a loopback port. It records every request it
// receives. Its methods are safe for concurrent use.
type Server struct {
	cache cachev3.SnapshotCache
	// Addr is the server's host:port.
	Addr string

	mu       sync.Mutex
	srv      *grpc.Server
	lis      net.Listener
	served   chan struct{} // closed when srv's Serve returns
	requests []*discoveryv3.DiscoveryRequest
	arrived  chan struct{} // closed and replaced at each request
	streams  int
}

// Start starts a management server on addr ("127.0.0.1:0" for a free
// port). Stop stops it.
func Start(addr string) (*Server, error) {
	cp := &Server{cache: cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil), arrived: make(chan struct{})}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	cp.Addr = lis.Addr().String()
	cp.serve(lis)
	return cp, nil
}

// serve starts the gRPC server on lis.
func (cp *Server) serve(lis net.Listener) {
	cb := serverv3.CallbackFuncs{
		StreamOpenFunc: func(context.Context, int64, string) error {
			cp.mu.Lock()
			cp.streams++
			cp.mu.Unlock()
			return nil
		},
		StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
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
	served := make(chan struct{})
	cp.srv, cp.lis, cp.served = srv, lis, served
	cp.mu.Unlock()
	go func() {
		defer close(served)
		_ = srv.Serve(lis) // returns when Stop stops it
	}()
}

// Stop stops the server, closing every stream and the listener, and
// returns once it has stopped serving.
func (cp *Server) Stop() {
	cp.mu.Lock()
	srv, lis, served := cp.srv, cp.lis, cp.served
	cp.srv, cp.lis, cp.served = nil, nil, nil
	cp.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Stop()
	// Serve may not have taken the listener yet; closing it here frees
	// the port for Restart either way.
	lis.Close()
	<-served
}

// Restart serves again on the same address, with the same snapshots.
func (cp *Server) Restart() error {
	lis, err := net.Listen("tcp", cp.Addr)
	if err != nil {
		return fmt.Errorf("controlplane: listening again on %s: %w", cp.Addr, err)
	}
	cp.serve(lis)
	return nil
}

// Set publishes a snapshot of version v for [Node].
func (cp *Server) Set(v string, clusters []*clusterv3.Cluster, assignments []*endpointv3.ClusterLoadAssignment) error {
	return cp.SetWithListeners(v, nil, clusters, assignments)
}

// WaitRequest waits until the server has received a request that match
// accepts, and returns it, or nil when ctx ends first.
func (cp *Server) WaitRequest(ctx context.Context, match func(*discoveryv3.DiscoveryRequest) bool) *discoveryv3.DiscoveryRequest {
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
			return nil
		}
	}
}

// Streams returns how many ADS streams were opened.
func (cp *Server) Streams() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.streams
}

// EDSCluster returns an EDS cluster whose endpoints come over ADS.
func EDSCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		},
	}
}

// Locality is one locality of an assignment, in region "r".
type Locality struct {
	Zone     string
	Priority uint32
	Weight   uint32
	Addrs    []string // host:port
	Weights  []uint32 // per address; nil for none
}

// Assignment returns a ClusterLoadAssignment of the localities. It
// panics on an address that is not host:port with a numeric port.
func Assignment(name string, ls ...Locality) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	for _, l := range ls {
		le := &endpointv3.LocalityLbEndpoints{
			Locality:            &corev3.Locality{Region: "r", Zone: l.Zone},
			Priority:            l.Priority,
			LoadBalancingWeight: wrapperspb.UInt32(l.Weight),
		}
		for i, a := range l.Addrs {
			host, port, err := net.SplitHostPort(a)
			if err != nil {
				panic(fmt.Sprintf("controlplane: address %q: %v", a, err))
			}
			p, err := strconv.ParseUint(port, 10, 16)
			if err != nil {
				panic(fmt.Sprintf("controlplane: address %q: %v", a, err))
			}
			ep := &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)},
				}}},
			}}}
			if l.Weights != nil {
				ep.LoadBalancingWeight = wrapperspb.UInt32(l.Weights[i])
			}
			le.LbEndpoints = append(le.LbEndpoints, ep)
		}
		cla.Endpoints = append(cla.Endpoints, le)
	}
	return cla
}
