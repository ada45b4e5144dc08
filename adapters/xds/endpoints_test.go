package xds

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// viaJSON is the JSON detour: m as proto3 JSON, read by eds.Parse.
func viaJSON(m *endpointv3.ClusterLoadAssignment) (*eds.ClusterLoadAssignment, error) {
	data, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	return eds.Parse(data)
}

// TestPropertyConvertAgreesWithParse: for random ClusterLoadAssignments,
// valid and not (every field eds.Parse refuses when set, default values,
// oneofs set to their zero value, out-of-range enums and weights),
// convertAssignment and the JSON detour agree: both accept with equal
// models, or both refuse at the same field.
func TestPropertyConvertAgreesWithParse(t *testing.T) {
	var accepted, runs int
	// The generator must exercise both sides: most random assignments
	// are refused somewhere, but a fair share must be accepted (about a
	// quarter with this generator; at least a tenth, more than three
	// standard deviations below, so that the check never flakes).
	defer func() { checkShare(t, "accepted", accepted, runs, 10) }()
	rapid.Check(t, func(t *rapid.T) {
		runs++
		m := genAssignment(t)
		valid, derr := convertAssignment(m)
		direct := valid.Assignment()
		parsed, perr := viaJSON(m)
		if (derr == nil) != (perr == nil) {
			t.Fatalf("direct: %v\nparse: %v\nmessage: %v", derr, perr, m)
		}
		if derr != nil {
			var de, pe *eds.Error
			if !errors.As(derr, &de) || !errors.As(perr, &pe) || de.Path != pe.Path {
				t.Fatalf("refused at different places:\ndirect: %v\nparse: %v", derr, perr)
			}
			return
		}
		accepted++
		if !reflect.DeepEqual(direct, parsed) {
			t.Fatalf("direct %+v\nparse %+v", direct, parsed)
		}
	})
}

// checkShare fails t unless got of the runs random assignments, at least
// one in n, were what says.
func checkShare(t *testing.T, what string, got, runs, n int) {
	t.Logf("%s: %d of %d", what, got, runs)
	if runs > 0 && got*n < runs {
		t.Errorf("only %d of %d random assignments were %s", got, runs, what)
	}
}

// rare draws true about one time in n.
func rare(t *rapid.T, n int, label string) bool { return rapid.IntRange(0, n-1).Draw(t, label) == 0 }

func genAssignment(t *rapid.T) *endpointv3.ClusterLoadAssignment {
	m := &endpointv3.ClusterLoadAssignment{ClusterName: "c"}
	if rare(t, 20, "no name") {
		m.ClusterName = ""
	}
	if rare(t, 30, "named endpoints") {
		m.NamedEndpoints = map[string]*endpointv3.Endpoint{"n": {}}
	}
	if rare(t, 10, "policy") {
		m.Policy = &endpointv3.ClusterLoadAssignment_Policy{}
		switch rapid.IntRange(0, 4).Draw(t, "policy field") {
		case 0:
			for range rapid.IntRange(0, 2).Draw(t, "drops") {
				d := &endpointv3.ClusterLoadAssignment_Policy_DropOverload{Category: rapid.SampledFrom([]string{"x", "lb", "x", ""}).Draw(t, "category")}
				if rapid.IntRange(0, 5).Draw(t, "drop percentage") > 0 {
					d.DropPercentage = &typev3.FractionalPercent{
						Numerator:   rapid.SampledFrom([]uint32{0, 1, 50, 100, 10000, 2000000}).Draw(t, "numerator"),
						Denominator: typev3.FractionalPercent_DenominatorType(rapid.SampledFrom([]int32{0, 1, 2, 0, 1, 2, 3}).Draw(t, "denominator")),
					}
				}
				m.Policy.DropOverloads = append(m.Policy.DropOverloads, d)
			}
		case 1:
			m.Policy.OverprovisioningFactor = wrapperspb.UInt32(rapid.Uint32Range(0, 200).Draw(t, "factor"))
		case 2:
			m.Policy.EndpointStaleAfter = durationpb.New(0)
		case 3:
			m.Policy.WeightedPriorityHealth = rapid.Bool().Draw(t, "wph")
		}
	}
	for range rapid.IntRange(0, 2).Draw(t, "localities") {
		m.Endpoints = append(m.Endpoints, genLocality(t))
	}
	return m
}

func genLocality(t *rapid.T) *endpointv3.LocalityLbEndpoints {
	le := &endpointv3.LocalityLbEndpoints{Priority: rapid.Uint32Range(0, 3).Draw(t, "priority")}
	if rapid.Bool().Draw(t, "has locality") {
		le.Locality = &corev3.Locality{Region: rapid.SampledFrom([]string{"", "r", "a/b"}).Draw(t, "region"), Zone: rapid.SampledFrom([]string{"", "z", "%"}).Draw(t, "zone")}
	}
	if rapid.IntRange(0, 4).Draw(t, "locality weight") > 0 {
		le.LoadBalancingWeight = wrapperspb.UInt32(rapid.SampledFrom([]uint32{1, 2, 3, 1, 2, 3, 0}).Draw(t, "lw"))
	}
	switch rapid.IntRange(0, 30).Draw(t, "lb config") {
	case 0:
		//lint:ignore SA1019 the deprecated field must still be refused
		le.LbConfig = &endpointv3.LocalityLbEndpoints_LoadBalancerEndpoints{LoadBalancerEndpoints: &endpointv3.LocalityLbEndpoints_LbEndpointList{}}
	case 1:
		le.LbConfig = &endpointv3.LocalityLbEndpoints_LedsClusterLocalityConfig{LedsClusterLocalityConfig: &endpointv3.LedsClusterLocalityConfig{}}
	}
	if rare(t, 10, "proximity") {
		le.Proximity = wrapperspb.UInt32(3)
	}
	for range rapid.IntRange(0, 2).Draw(t, "endpoints") {
		le.LbEndpoints = append(le.LbEndpoints, genEndpoint(t))
	}
	return le
}

func genEndpoint(t *rapid.T) *endpointv3.LbEndpoint {
	ep := &endpointv3.LbEndpoint{HealthStatus: corev3.HealthStatus(rapid.IntRange(0, 6).Draw(t, "health"))}
	if rapid.Bool().Draw(t, "endpoint weight") {
		ep.LoadBalancingWeight = wrapperspb.UInt32(rapid.SampledFrom([]uint32{1, 2, 3, 1, 2, 3, 0}).Draw(t, "ew"))
	}
	if rare(t, 4, "metadata") {
		v := rapid.SampledFrom([]any{"pod-1", "", 7.0, true}).Draw(t, "hash key")
		s, _ := structpb.NewStruct(map[string]any{"hash_key": v, "other": "x"})
		filter := rapid.SampledFrom([]string{"envoy.lb", "acme"}).Draw(t, "filter")
		ep.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{filter: s}}
	}
	if rare(t, 30, "endpoint name") {
		ep.HostIdentifier = &endpointv3.LbEndpoint_EndpointName{EndpointName: rapid.SampledFrom([]string{"", "n"}).Draw(t, "en")}
		return ep
	}
	if rare(t, 30, "no endpoint") {
		return ep
	}
	e := &endpointv3.Endpoint{Hostname: rapid.SampledFrom([]string{"", "h"}).Draw(t, "hostname")}
	ep.HostIdentifier = &endpointv3.LbEndpoint_Endpoint{Endpoint: e}
	if rare(t, 30, "additional") {
		e.AdditionalAddresses = []*endpointv3.Endpoint_AdditionalAddress{{}}
	}
	switch rapid.IntRange(0, 40).Draw(t, "address kind") {
	case 0:
		return ep // no address
	case 1:
		e.Address = &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: "/p"}}}
		return ep
	case 2:
		e.Address = &corev3.Address{Address: &corev3.Address_EnvoyInternalAddress{EnvoyInternalAddress: &corev3.EnvoyInternalAddress{}}}
		return ep
	case 3:
		e.Address = &corev3.Address{}
		return ep
	}
	sa := &corev3.SocketAddress{
		Address:  rapid.SampledFrom([]string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "host.example", "::1", "fe80::1%eth0", ""}).Draw(t, "addr"),
		Protocol: corev3.SocketAddress_Protocol(rapid.SampledFrom([]int{0, 0, 0, 0, 0, 0, 0, 0, 1, 5}).Draw(t, "protocol")),
	}
	switch rapid.IntRange(0, 20).Draw(t, "port") {
	case 0:
	case 1:
		sa.PortSpecifier = &corev3.SocketAddress_NamedPort{NamedPort: rapid.SampledFrom([]string{"", "http"}).Draw(t, "named")}
	default:
		sa.PortSpecifier = &corev3.SocketAddress_PortValue{PortValue: rapid.SampledFrom([]uint32{80, 443, 8080, 80, 443, 8080, 0, 70000}).Draw(t, "pv")}
	}
	if rare(t, 30, "resolver") {
		sa.ResolverName = "r"
	}
	if rare(t, 30, "netns") {
		sa.NetworkNamespaceFilepath = "/ns"
	}
	if rare(t, 10, "ipv4 compat") {
		sa.Ipv4Compat = true
	}
	e.Address = &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: sa}}
	return ep
}

// Envoy's default overprovisioning_factor (140) is ignored, as gRFC A27
// says, and a locality of load_balancing_weight 0 is accepted and left out
// of the tree, as grpc-go does: the assignment is not NACKed.
func TestConvertIgnoresOverprovisioningAndZeroWeightLocalities(t *testing.T) {
	sock := func(addr string) *endpointv3.LbEndpoint {
		return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80}}}}}}}
	}
	m := &endpointv3.ClusterLoadAssignment{
		ClusterName: "c",
		Policy:      &endpointv3.ClusterLoadAssignment_Policy{OverprovisioningFactor: wrapperspb.UInt32(140)},
		Endpoints: []*endpointv3.LocalityLbEndpoints{
			{Locality: &corev3.Locality{Zone: "a"}, LoadBalancingWeight: wrapperspb.UInt32(0), LbEndpoints: []*endpointv3.LbEndpoint{sock("10.0.0.1")}},
			{Locality: &corev3.Locality{Zone: "b"}, LoadBalancingWeight: wrapperspb.UInt32(3), LbEndpoints: []*endpointv3.LbEndpoint{sock("10.0.0.2")}},
		},
	}
	cla, err := convertAssignment(m)
	if err != nil {
		t.Fatalf("convertAssignment: %v", err)
	}
	var n eds.Namer
	c, err := n.ConvertValid(cla, eds.Policies{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.State.Addresses) != 1 || c.State.Addresses[0].Addr != "10.0.0.2:80" || len(c.LeftOut) != 1 {
		t.Errorf("addresses %v, left out %q; want 10.0.0.2:80 only, the zero-weight locality left out", c.State.Addresses, c.LeftOut)
	}
	if parsed, err := viaJSON(m); err != nil || !reflect.DeepEqual(parsed, cla.Assignment()) {
		t.Errorf("the JSON front end gives %+v, %v; want %+v", parsed, err, cla.Assignment())
	}
}

// The wire reader's result, when it reads a message, is protobuf's and
// convertAssignment's, validated: the same assignment, or the same
// refusal. It must read the common form (the benchmarks' assignment,
// weights on every endpoint) and a fair share of random assignments
// (about a third with this generator; at least a twentieth, so that the
// check never flakes); the rest takes the general path.
func TestPropertyReadAssignmentAgreesWithConvert(t *testing.T) {
	big, err := proto.Marshal(controlplane.BigAssignment("c", 100, 1))
	if err != nil {
		t.Fatal(err)
	}
	if read, problem := checkReadAssignment(big); !read || problem != "" {
		t.Fatalf("the common form: read %v, %s", read, problem)
	}
	var read, runs int // of genAssignment's
	defer func() { checkShare(t, "read from the wire", read, runs, 20) }()
	rapid.Check(t, func(t *rapid.T) {
		runs++
		for _, m := range []*endpointv3.ClusterLoadAssignment{genAssignment(t), genCommonAssignment(t)} {
			raw, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			ok, problem := checkReadAssignment(raw)
			if problem != "" {
				t.Fatal(problem)
			}
			if ok && m.ClusterName != "common" {
				read++
			}
		}
	})
}

// genCommonAssignment draws an assignment of the common form the wire
// reader reads, mostly valid (rarely a duplicate address, an endpoint
// weight of 0, a UDP socket address or one without a port), so that the
// values read are compared, not only the refusals.
func genCommonAssignment(t *rapid.T) *endpointv3.ClusterLoadAssignment {
	m := &endpointv3.ClusterLoadAssignment{ClusterName: "common"}
	next := 0
	for range rapid.IntRange(1, 3).Draw(t, "localities") {
		le := &endpointv3.LocalityLbEndpoints{Priority: rapid.Uint32Range(0, 1).Draw(t, "priority"),
			LoadBalancingWeight: wrapperspb.UInt32(rapid.Uint32Range(0, 5).Draw(t, "lw"))}
		if rapid.Bool().Draw(t, "has locality") {
			le.Locality = &corev3.Locality{Region: "r", Zone: rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "zone"), SubZone: rapid.SampledFrom([]string{"", "s"}).Draw(t, "sub zone")}
		}
		if rare(t, 5, "proximity") {
			le.Proximity = wrapperspb.UInt32(2)
		}
		for range rapid.IntRange(1, 3).Draw(t, "endpoints") {
			if !rare(t, 20, "duplicate") {
				next++
			}
			sa := &corev3.SocketAddress{Address: fmt.Sprintf("10.0.0.%d", next), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 80},
				Ipv4Compat: rare(t, 5, "ipv4 compat")}
			if rare(t, 20, "udp") {
				sa.Protocol = corev3.SocketAddress_UDP
			}
			if rare(t, 20, "no port") {
				sa.PortSpecifier = nil
			}
			ep := &endpointv3.LbEndpoint{HealthStatus: corev3.HealthStatus(rapid.IntRange(0, 5).Draw(t, "health")),
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Hostname: rapid.SampledFrom([]string{"", "h"}).Draw(t, "hostname"),
					Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: sa}}}}}
			if rapid.Bool().Draw(t, "endpoint weight") {
				ep.LoadBalancingWeight = wrapperspb.UInt32(rapid.Uint32Range(0, 9).Draw(t, "ew"))
			}
			le.LbEndpoints = append(le.LbEndpoints, ep)
		}
		m.Endpoints = append(m.Endpoints, le)
	}
	return m
}

// checkReadAssignment reads raw with readAssignment, and, when it reads
// it, says how the result differs from protobuf's and convertAssignment's.
func checkReadAssignment(raw []byte) (read bool, problem string) {
	cla, ok := readAssignment(raw)
	if !ok {
		return false, ""
	}
	var m endpointv3.ClusterLoadAssignment
	if err := proto.Unmarshal(raw, &m); err != nil {
		return true, fmt.Sprintf("read from the wire, but protobuf refuses it: %v", err)
	}
	want, werr := convertAssignment(&m)
	gerr := cla.Validate()
	switch {
	case cla.ClusterName != m.GetClusterName():
		return true, fmt.Sprintf("name %q, protobuf's %q", cla.ClusterName, m.GetClusterName())
	case (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error():
		return true, fmt.Sprintf("wire: %v\nconvert: %v\nmessage: %v", gerr, werr, &m)
	case gerr == nil && !reflect.DeepEqual(cla, want.Assignment()):
		return true, fmt.Sprintf("wire %+v\nconvert %+v", cla, want)
	}
	return true, ""
}
