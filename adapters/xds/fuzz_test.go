package xds

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
)

// FuzzDecodeResources feeds arbitrary bytes to every resource decoder, as a
// management server could: they return an error or a value, never panic,
// and a valid value always has a name.
func FuzzDecodeResources(f *testing.F) {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{{
		Locality:            &corev3.Locality{Region: "r"},
		LoadBalancingWeight: wrapperspb.UInt32(1),
		LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: "10.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80},
			}}},
		}}}},
	}}}
	cluster := &clusterv3.Cluster{Name: "c", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}}
	aggregate := controlplane.AggregateCluster("a", "b", "c")
	logicalDNS := controlplane.LogicalDNSCluster("d", "localhost", 8080)
	for _, m := range []proto.Message{cla, cluster, aggregate, logicalDNS} {
		raw, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, decode := range []func([]byte) (string, any, error){decodeCluster, decodeEndpoints, decodeListener, decodeRouteConfig} {
			name, v, err := decode(raw)
			if err == nil && (name == "" || v == nil) {
				t.Fatalf("a valid resource without a name or value: %q, %v", name, v)
			}
		}
	})
}

// FuzzPeakEwmaPolicy feeds arbitrary bytes as the value of Envoy's
// PeakEwma: the conversion returns an error or a config that lbkit's
// registry accepts (convertPolicy checks it), never panics.
func FuzzPeakEwmaPolicy(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, 0x08, 0x05, 0x22, 0x03, 0x10, 0x80, 0x01}) // decay_time 5s, default_rtt 128 ns
	f.Add([]byte{0x2a, 0x09, 0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f})       // penalty_value NaN
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, ok, err := convertPolicy(&anypb.Any{TypeUrl: "type.googleapis.com/" + peakEwmaType, Value: raw}, "p", 0)
		if !ok {
			t.Fatal("PeakEwma skipped: it is a type lbkit supports")
		}
		if err == nil && len(c.leaf) == 0 {
			t.Fatalf("accepted %x without a policy", raw)
		}
	})
}

// FuzzReadAssignment feeds arbitrary bytes to the wire reader of
// assignments: what it reads, protobuf reads too, and convertAssignment
// gives the same assignment or the same refusal (checkReadAssignment).
func FuzzReadAssignment(f *testing.F) {
	for _, n := range []int{1, 3} {
		raw, err := proto.Marshal(controlplane.BigAssignment("c", n, 1))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, problem := checkReadAssignment(raw); problem != "" {
			t.Fatal(problem)
		}
	})
}
