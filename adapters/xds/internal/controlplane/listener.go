package controlplane

import (
	"context"
	"fmt"
	"net"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// SetWithListeners publishes a snapshot of version v for [Node] that also
// holds listeners, for clients that start from LDS (grpc-go's xds
// resolver) rather than from CDS as lbkit's does.
func (cp *Server) SetWithListeners(v string, listeners []*listenerv3.Listener, clusters []*clusterv3.Cluster, assignments []*endpointv3.ClusterLoadAssignment) error {
	res := map[resourcev3.Type][]types.Resource{resourcev3.ClusterType: nil, resourcev3.EndpointType: nil}
	for _, l := range listeners {
		res[resourcev3.ListenerType] = append(res[resourcev3.ListenerType], l)
	}
	for _, c := range clusters {
		res[resourcev3.ClusterType] = append(res[resourcev3.ClusterType], c)
	}
	for _, a := range assignments {
		res[resourcev3.EndpointType] = append(res[resourcev3.EndpointType], a)
	}
	snap, err := cachev3.NewSnapshot(v, res)
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	return cp.cache.SetSnapshot(context.Background(), Node, snap)
}

// Resources are the resources of one snapshot, of every type a client
// that starts from LDS reads.
type Resources struct {
	Listeners   []*listenerv3.Listener
	Routes      []*routev3.RouteConfiguration
	Clusters    []*clusterv3.Cluster
	Assignments []*endpointv3.ClusterLoadAssignment
}

// SetResources publishes a snapshot of version v for [Node] holding res.
func (cp *Server) SetResources(v string, res Resources) error {
	m := map[resourcev3.Type][]types.Resource{
		resourcev3.ListenerType: nil, resourcev3.RouteType: nil, resourcev3.ClusterType: nil, resourcev3.EndpointType: nil,
	}
	for _, l := range res.Listeners {
		m[resourcev3.ListenerType] = append(m[resourcev3.ListenerType], l)
	}
	for _, r := range res.Routes {
		m[resourcev3.RouteType] = append(m[resourcev3.RouteType], r)
	}
	for _, c := range res.Clusters {
		m[resourcev3.ClusterType] = append(m[resourcev3.ClusterType], c)
	}
	for _, a := range res.Assignments {
		m[resourcev3.EndpointType] = append(m[resourcev3.EndpointType], a)
	}
	snap, err := cachev3.NewSnapshot(v, m)
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	return cp.cache.SetSnapshot(context.Background(), Node, snap)
}

// APIListener returns the listener a gRPC client reads for the target
// xds:///name: an API listener whose HTTP connection manager routes every
// request to cluster, with its route configuration inline (no RDS).
func APIListener(name, cluster string) (*listenerv3.Listener, error) {
	return apiListener(name, &hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
		Name: name,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    name,
			Domains: []string{"*"},
			Routes: []*routev3.Route{{
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
			}},
		}},
	}}})
}

// RDSListener returns the API listener for the target xds:///name whose
// HTTP connection manager takes its routes from the route configuration
// called routes, over ADS (RDS), as istiod and Traffic Director send it.
func RDSListener(name, routes string) (*listenerv3.Listener, error) {
	return apiListener(name, &hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
		ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		RouteConfigName: routes,
	}}})
}

// apiListener returns the API listener called name whose HTTP connection
// manager is m (its route specifier set) with the router filter added.
func apiListener(name string, m *hcmv3.HttpConnectionManager) (*listenerv3.Listener, error) {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	m.HttpFilters = append(m.HttpFilters, &hcmv3.HttpFilter{Name: "router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}})
	hcm, err := anypb.New(m)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: hcm}}, nil
}

// BigAssignment returns an assignment of n endpoints in localities of
// 1000 over two priorities (locality l has priority l%2); set (0 or 1)
// chooses one of two disjoint address sets: endpoint i of set s is
// 10.<64s + i>>16>.<i>>8&255>.<i&255>:80. The benchmarks swap between the
// sets, so that every update replaces every endpoint.
func BigAssignment(name string, n, set int) *endpointv3.ClusterLoadAssignment {
	const perLocality = 1000
	var ls []Locality
	for l := range (n + perLocality - 1) / perLocality {
		loc := Locality{Zone: "z" + strconv.Itoa(l), Priority: uint32(l % 2), Weight: 1}
		for e := range min(perLocality, n-l*perLocality) {
			i := l*perLocality + e
			loc.Addrs = append(loc.Addrs, fmt.Sprintf("10.%d.%d.%d:80", set*64+i>>16, i>>8&255, i&255))
		}
		ls = append(ls, loc)
	}
	return Assignment(name, ls...)
}

// BigAssignmentPriority returns the priority of an address of
// [BigAssignment] (as host:port), or -1 for an address of another form.
func BigAssignmentPriority(addr string) int {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return -1
	}
	var x, b, c int
	if n, err := fmt.Sscanf(host, "10.%d.%d.%d", &x, &b, &c); err != nil || n != 3 {
		return -1
	}
	i := (x%64)<<16 | b<<8 | c
	return i / 1000 % 2
}
