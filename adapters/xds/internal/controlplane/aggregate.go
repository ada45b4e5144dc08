package controlplane

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// AggregateClusterType is the type_url of an aggregate cluster's config.
const AggregateClusterType = "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig"

// AggregateCluster returns an aggregate cluster (gRFC A37) over clusters,
// in priority order. It panics if the config does not encode.
func AggregateCluster(name string, clusters ...string) *clusterv3.Cluster {
	v, err := proto.Marshal(&aggregatev3.ClusterConfig{Clusters: clusters})
	if err != nil {
		panic("controlplane: " + err.Error())
	}
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
		Name: "envoy.clusters.aggregate", TypedConfig: &anypb.Any{TypeUrl: AggregateClusterType, Value: v},
	}}}
}

// LogicalDNSCluster returns a LOGICAL_DNS cluster resolving host:port.
func LogicalDNSCluster(name, host string, port uint32) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
				}}},
			}}}},
		}}}}
}
