package xds_test

import (
	"fmt"
	"net/http"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/conn"
)

// canaryListener returns an API listener named name whose routes split
// every request 90/10 between the clusters stable and canary.
func canaryListener(name string) (*listenerv3.Listener, error) {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		return nil, err
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			Name: name,
			VirtualHosts: []*routev3.VirtualHost{{Domains: []string{"*"}, Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{
					WeightedClusters: &routev3.WeightedCluster{Clusters: []*routev3.WeightedCluster_ClusterWeight{
						{Name: "stable", Weight: wrapperspb.UInt32(90)},
						{Name: "canary", Weight: wrapperspb.UInt32(10)},
					}},
				}}},
			}}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	if err != nil {
		return nil, err
	}
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: hcm}}, nil
}

// A channel whose target names a listener routes each request as the
// listener's routes say: here a 90/10 canary split, exact over every 10
// requests.
func ExampleBuilder_listener() {
	addrs, stop := exampleServers("stable", "canary")
	defer stop()
	cp, err := controlplane.Start("127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cp.Stop()
	l, err := canaryListener("shop.default.svc.cluster.local:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = cp.SetResources("1", controlplane.Resources{
		Listeners: []*listenerv3.Listener{l},
		Clusters:  []*clusterv3.Cluster{controlplane.EDSCluster("stable"), controlplane.EDSCluster("canary")},
		Assignments: []*endpointv3.ClusterLoadAssignment{
			controlplane.Assignment("stable", controlplane.Locality{Zone: "a", Weight: 1, Addrs: addrs[:1]}),
			controlplane.Assignment("canary", controlplane.Locality{Zone: "a", Weight: 1, Addrs: addrs[1:]}),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	boot := &xds.Bootstrap{Servers: []xds.Server{{URI: cp.Addr, Creds: xds.Creds{Type: "insecure"}}}, Node: xds.Node{ID: testNode}}
	b, err := xds.NewBuilder(xds.WithBootstrap(boot))
	if err != nil {
		fmt.Println(err)
		return
	}
	ch, err := conn.New("xds:///shop.default.svc.cluster.local:8080", conn.WithResolver(b))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	// Once both clusters have answered (their connections are up), every
	// 10 requests go 9 to stable and 1 to canary.
	for seen := map[string]bool{}; !seen["stable"] || !seen["canary"]; {
		name, err := get(client)
		if err != nil {
			fmt.Println(err)
			return
		}
		seen[name] = true
	}
	count := map[string]int{}
	for range 100 {
		name, _ := get(client)
		count[name]++
	}
	fmt.Println("stable:", count["stable"], "canary:", count["canary"])
	// Output:
	// stable: 90 canary: 10
}
