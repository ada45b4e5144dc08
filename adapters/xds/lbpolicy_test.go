package xds_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"
	least_requestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	maglevv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	pick_firstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	randomv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/random/v3"
	ring_hashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	round_robinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrr_localityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbkit/lbkit/adapters/xds"
	_ "github.com/lbkit/lbkit/lb/pickfirst"
	_ "github.com/lbkit/lbkit/lb/roundrobin"
)

// anyOf wraps m in an Any, or returns m when it is one already.
func anyOf(m proto.Message) *anypb.Any {
	if a, ok := m.(*anypb.Any); ok {
		return a
	}
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

// lbPolicy is a LoadBalancingPolicy of ms, in order; a nil entry is a
// Policy without typed_extension_config.
func lbPolicy(ms ...proto.Message) *clusterv3.LoadBalancingPolicy {
	p := &clusterv3.LoadBalancingPolicy{}
	for _, m := range ms {
		entry := &clusterv3.LoadBalancingPolicy_Policy{}
		if m != nil {
			entry.TypedExtensionConfig = &corev3.TypedExtensionConfig{Name: "p", TypedConfig: anyOf(m)}
		}
		p.Policies = append(p.Policies, entry)
	}
	return p
}

func withLBPolicy(ms ...proto.Message) func(*clusterv3.Cluster) {
	return func(c *clusterv3.Cluster) { c.LoadBalancingPolicy = lbPolicy(ms...) }
}

func wrrLocality(ms ...proto.Message) *wrr_localityv3.WrrLocality {
	return &wrr_localityv3.WrrLocality{EndpointPickingPolicy: lbPolicy(ms...)}
}

// nested wraps m in n WrrLocality.
func nested(n int, m proto.Message) proto.Message {
	for range n {
		m = wrrLocality(m)
	}
	return m
}

func typedStruct(url string, fields map[string]any) *xdstypev3.TypedStruct {
	ts := &xdstypev3.TypedStruct{TypeUrl: url}
	if fields != nil {
		v, err := structpb.NewStruct(fields)
		if err != nil {
			panic(err)
		}
		ts.Value = v
	}
	return ts
}

var (
	rr   = &round_robinv3.RoundRobin{}
	pf   = &pick_firstv3.PickFirst{}
	csw  = &cswrrv3.ClientSideWeightedRoundRobin{}
	ring = &ring_hashv3.RingHash{}
)

// typedConfig is the field path of entry i of a top-level list.
func typedConfig(i int) string {
	return "load_balancing_policy.policies[" + strconv.Itoa(i) + "].typed_extension_config.typed_config"
}

// lbPolicyCase is a cluster with load_balancing_policy that ParseCluster
// accepts, with the endpoint policy, the tree's shape and the prefixes of
// the Ignored entries it must give.
type lbPolicyCase struct {
	name     string
	cluster  *clusterv3.Cluster
	endpoint string
	flat     bool
	ignored  []string
}

// validLBPolicies are the lbPolicyCases of gRFC A52's policies.
var validLBPolicies = []lbPolicyCase{
	{"WrrLocality of RoundRobin", edsCluster(withLBPolicy(wrrLocality(rr))), `[{"round_robin":{}}]`, false, nil},
	{"RoundRobin alone: no locality layer", edsCluster(withLBPolicy(rr)), `[{"round_robin":{}}]`, true, nil},
	{"PickFirst", edsCluster(withLBPolicy(pf)), `[{"pick_first":{"shuffleAddressList":false}}]`, true, nil},
	{"PickFirst shuffling", edsCluster(withLBPolicy(&pick_firstv3.PickFirst{ShuffleAddressList: true})),
		`[{"pick_first":{"shuffleAddressList":true}}]`, true, nil},
	{"WrrLocality of PickFirst", edsCluster(withLBPolicy(wrrLocality(pf))), `[{"pick_first":{"shuffleAddressList":false}}]`, false, nil},
	{"LeastRequest without choice_count: 2", edsCluster(withLBPolicy(&least_requestv3.LeastRequest{})),
		`[{"least_request_experimental":{"choiceCount":2}}]`, true, nil},
	{"WrrLocality of LeastRequest, choice_count 7", edsCluster(withLBPolicy(wrrLocality(&least_requestv3.LeastRequest{ChoiceCount: u32(7)}))),
		`[{"least_request_experimental":{"choiceCount":7}}]`, false, nil},
	{"LeastRequest, choice_count 2", edsCluster(withLBPolicy(&least_requestv3.LeastRequest{ChoiceCount: u32(2)})),
		`[{"least_request_experimental":{"choiceCount":2}}]`, true, nil},
	{"LeastRequest, choice_count 11 is capped at 10", edsCluster(withLBPolicy(&least_requestv3.LeastRequest{ChoiceCount: u32(11)})),
		`[{"least_request_experimental":{"choiceCount":10}}]`, true, nil},
	{"LeastRequest, choice_count 2^32-1 is capped at 10", edsCluster(withLBPolicy(&least_requestv3.LeastRequest{ChoiceCount: u32(1<<32 - 1)})),
		`[{"least_request_experimental":{"choiceCount":10}}]`, true, nil},
	{"Random skipped for PickFirst", edsCluster(withLBPolicy(&randomv3.Random{}, pf)),
		`[{"pick_first":{"shuffleAddressList":false}}]`, true,
		[]string{typedConfig(0) + `: skipped (gRFC A52): "type.googleapis.com/envoy.extensions.load_balancing_policies.random.v3.Random" is not a policy lbkit supports`}},
	{"ClientSideWeightedRoundRobin: A58's weighted_round_robin, unset fields left to their defaults", edsCluster(withLBPolicy(wrrLocality(csw))),
		`[{"weighted_round_robin":{}}]`, false, nil},
	{"ClientSideWeightedRoundRobin with every A58 field", edsCluster(withLBPolicy(&cswrrv3.ClientSideWeightedRoundRobin{
		EnableOobLoadReport: wrapperspb.Bool(false), OobReportingPeriod: durationpb.New(5 * time.Second),
		BlackoutPeriod: durationpb.New(0), WeightExpirationPeriod: durationpb.New(time.Minute),
		WeightUpdatePeriod: durationpb.New(1500 * time.Millisecond), ErrorUtilizationPenalty: wrapperspb.Float(0.5),
		MetricNamesForComputingUtilization: []string{"named_metrics.gpu"}})),
		`[{"weighted_round_robin":{"enableOobLoadReport":false,"oobReportingPeriod":"5s","blackoutPeriod":"0s",` +
			`"weightExpirationPeriod":"60s","weightUpdatePeriod":"1.500s","errorUtilizationPenalty":0.5}}]`, true,
		[]string{typedConfig(0) + ".metric_names_for_computing_utilization: ignored"}},
	{"Random and an unregistered TypedStruct skipped, then a WrrLocality skipping inside", edsCluster(withLBPolicy(&randomv3.Random{}, typedStruct("type.googleapis.com/myorg.Lb", nil), wrrLocality(&randomv3.Random{}, rr))),
		`[{"round_robin":{}}]`, false,
		[]string{typedConfig(0) + ": skipped", typedConfig(1) + ": skipped",
			typedConfig(2) + ".endpoint_picking_policy.policies[0].typed_extension_config.typed_config: skipped"}},
	{"RingHash: every endpoint of a priority, A42's sizes set explicitly", edsCluster(withLBPolicy(ring)),
		`[{"ring_hash_experimental":{"minRingSize":1024,"maxRingSize":8388608}}]`, true, nil},
	{"RingHash with sizes, XX_HASH and a balance factor", edsCluster(withLBPolicy(&ring_hashv3.RingHash{
		HashFunction: ring_hashv3.RingHash_XX_HASH, MinimumRingSize: u64(10), MaximumRingSize: u64(100),
		ConsistentHashingLbConfig: &commonv3.ConsistentHashingLbConfig{HashBalanceFactor: u32(150)},
	})), `[{"ring_hash_experimental":{"minRingSize":10,"maxRingSize":100,"hashBalanceFactor":150}}]`, true, nil},
	{"Maglev: Envoy's default table", edsCluster(withLBPolicy(&maglevv3.Maglev{})), `[{"maglev_experimental":{"tableSize":65537}}]`, true, nil},
	{"Maglev inside WrrLocality keeps the locality layer", edsCluster(withLBPolicy(wrrLocality(&maglevv3.Maglev{TableSize: u64(251)}))),
		`[{"maglev_experimental":{"tableSize":251}}]`, false, nil},
	{"the first supported entry wins", edsCluster(withLBPolicy(rr, pf)), `[{"round_robin":{}}]`, true, nil},
	{"xds.type.v3.TypedStruct naming a registered policy", edsCluster(withLBPolicy(typedStruct("type.googleapis.com/weighted_round_robin", map[string]any{}))),
		`[{"weighted_round_robin":{}}]`, true, nil},
	{"udpa.type.v1.TypedStruct under WrrLocality, its value as the config", edsCluster(withLBPolicy(wrrLocality(&udpatypev1.TypedStruct{
		TypeUrl: "type.googleapis.com/least_request_experimental",
		Value:   &structpb.Struct{Fields: map[string]*structpb.Value{"choiceCount": structpb.NewNumberValue(3)}},
	}))), `[{"least_request_experimental":{"choiceCount":3}}]`, false, nil},
	{"TypedStruct without value", edsCluster(withLBPolicy(typedStruct("pick_first", nil))), `[{"pick_first":{}}]`, true, nil},
	{"a TypedStruct's fields the policy does not know are ignored and listed", edsCluster(withLBPolicy(typedStruct("type.googleapis.com/least_request_experimental", map[string]any{"choiceCount": 3, "choicICount": 3}))),
		`[{"least_request_experimental":{"choicICount":3,"choiceCount":3}}]`, true,
		[]string{typedConfig(0) + ".value: [0].least_request_experimental.choicICount: a field least_request_experimental does not know; ignored"}},
	{"TypedStruct naming an unregistered policy is skipped", edsCluster(withLBPolicy(typedStruct("type.googleapis.com/myorg.MyCustomLb", map[string]any{"a": 1}), rr)),
		`[{"round_robin":{}}]`, true,
		[]string{typedConfig(0) + `: skipped (gRFC A52): xds.type.v3.TypedStruct of "type.googleapis.com/myorg.MyCustomLb" (no such policy is registered)`}},
	{"an entry without typed_extension_config is skipped", edsCluster(withLBPolicy(nil, pf)),
		`[{"pick_first":{"shuffleAddressList":false}}]`, true, []string{typedConfig(0) + ": skipped (gRFC A52): an entry without typed_config"}},
	{"an unknown type is skipped", edsCluster(withLBPolicy(&anypb.Any{TypeUrl: "type.googleapis.com/myorg.Unknown"}, rr)),
		`[{"round_robin":{}}]`, true, []string{typedConfig(0) + `: skipped (gRFC A52): "type.googleapis.com/myorg.Unknown"`}},
	{"load_balancing_policy is used instead of lb_policy and lb_config", edsCluster(withPolicy(clusterv3.Cluster_RING_HASH), func(c *clusterv3.Cluster) {
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{}}
	}, withLBPolicy(pf)), `[{"pick_first":{"shuffleAddressList":false}}]`, true,
		[]string{"lb_policy: ignored (gRFC A52): load_balancing_policy is set", "ring_hash_lb_config: ignored (gRFC A52)"}},
	{"lb_policy LOAD_BALANCING_POLICY_CONFIG with load_balancing_policy", edsCluster(withPolicy(clusterv3.Cluster_LOAD_BALANCING_POLICY_CONFIG), withLBPolicy(rr)),
		`[{"round_robin":{}}]`, true, nil},
	{"16 levels of WrrLocality", edsCluster(withLBPolicy(nested(16, rr))), `[{"round_robin":{}}]`, false, nil},
	{"WrrLocality inside WrrLocality adds nothing", edsCluster(withLBPolicy(wrrLocality(wrrLocality(pf)))),
		`[{"pick_first":{"shuffleAddressList":false}}]`, false, nil},
	{"RoundRobin fields A52 leaves out", edsCluster(withLBPolicy(&round_robinv3.RoundRobin{
		SlowStartConfig: &commonv3.SlowStartConfig{}, LocalityLbConfig: &commonv3.LocalityLbConfig{},
	})), `[{"round_robin":{}}]`, true, []string{typedConfig(0) + ".slow_start_config: ignored: no slow_start_window", typedConfig(0) + ".locality_lb_config: ignored (gRFC A52"}},
	{"LeastRequest fields A48 and A52 leave out", edsCluster(withLBPolicy(&least_requestv3.LeastRequest{
		ActiveRequestBias: &corev3.RuntimeDouble{DefaultValue: 1, RuntimeKey: "k"}, SlowStartConfig: &commonv3.SlowStartConfig{},
		LocalityLbConfig: &commonv3.LocalityLbConfig{},
		//lint:ignore SA1019 a control plane may still send the deprecated enable_full_scan
		EnableFullScan: wrapperspb.Bool(true), SelectionMethod: least_requestv3.LeastRequest_FULL_SCAN,
	})), `[{"least_request_experimental":{"choiceCount":2}}]`, true, []string{
		typedConfig(0) + ".active_request_bias: ignored (gRFC A48)", typedConfig(0) + ".slow_start_config: ignored: no slow_start_window",
		typedConfig(0) + ".locality_lb_config: ignored (gRFC A52", typedConfig(0) + ".enable_full_scan: ignored (gRFC A52",
		typedConfig(0) + ".selection_method: ignored (gRFC A52"}},
	{"PickFirst with outlier detection", edsCluster(withLBPolicy(pf), withOutlierDetection(&clusterv3.OutlierDetection{Interval: dur(5e9)})),
		`[{"pick_first":{"shuffleAddressList":false}}]`, true, nil},
}

func TestParseClusterLoadBalancingPolicy(t *testing.T) { checkLBPolicies(t, validLBPolicies) }

// checkLBPolicies checks that ParseCluster gives each case's endpoint
// policy, shape and Ignored entries.
func checkLBPolicies(t *testing.T, cases []lbPolicyCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := xds.ParseCluster(tt.cluster)
			if err != nil {
				t.Fatalf("ParseCluster: %v", err)
			}
			if string(got.Policies.Endpoint) != tt.endpoint || got.Policies.Flat != tt.flat {
				t.Errorf("endpoint policy %s, flat %t; want %s, %t", got.Policies.Endpoint, got.Policies.Flat, tt.endpoint, tt.flat)
			}
			if len(got.Ignored) != len(tt.ignored) {
				t.Fatalf("Ignored = %q, want %d entries starting %q", got.Ignored, len(tt.ignored), tt.ignored)
			}
			for i, want := range tt.ignored {
				if !strings.HasPrefix(got.Ignored[i], want) {
					t.Errorf("Ignored[%d] = %q, want it to start with %q", i, got.Ignored[i], want)
				}
			}
		})
	}
}

// depthPath is the field path of the list inside n WrrLocality.
func depthPath(n int) string {
	p := "load_balancing_policy"
	for range n {
		p += ".policies[0].typed_extension_config.typed_config.endpoint_picking_policy"
	}
	return p
}

// lbPolicyErrors are clusters whose load_balancing_policy ParseCluster
// refuses, with the field and the start of the error.
var lbPolicyErrors = []clusterError{
	{"no policies", edsCluster(withLBPolicy()), "load_balancing_policy.policies",
		"load_balancing_policy.policies: empty: no policy to choose (gRFC A52)"},
	{"no supported policy", edsCluster(withLBPolicy(&randomv3.Random{}, typedStruct("type.googleapis.com/myorg.Lb", nil))), "load_balancing_policy.policies",
		`load_balancing_policy.policies: no policy lbkit supports (gRFC A52): skipped ` +
			`"type.googleapis.com/envoy.extensions.load_balancing_policies.random.v3.Random", ` +
			`xds.type.v3.TypedStruct of "type.googleapis.com/myorg.Lb" (no such policy is registered); lbkit supports envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality`},
	{"WrrLocality without endpoint_picking_policy", edsCluster(withLBPolicy(&wrr_localityv3.WrrLocality{})),
		typedConfig(0) + ".endpoint_picking_policy.policies", typedConfig(0) + ".endpoint_picking_policy.policies: empty"},
	{"WrrLocality with no supported endpoint policy", edsCluster(withLBPolicy(wrrLocality(&randomv3.Random{}), rr)),
		typedConfig(0) + ".endpoint_picking_policy.policies", typedConfig(0) + ".endpoint_picking_policy.policies: no policy lbkit supports (gRFC A52): skipped"},
	{"LeastRequest choice_count 1 after a skipped entry", edsCluster(withLBPolicy(&randomv3.Random{}, &least_requestv3.LeastRequest{ChoiceCount: u32(1)})),
		typedConfig(1) + ".choice_count", typedConfig(1) + ".choice_count: 1 is below 2 (gRFC A48)"},
	{"an invalid chosen entry is not passed over for the next", edsCluster(withLBPolicy(&least_requestv3.LeastRequest{ChoiceCount: u32(0)}, rr)),
		typedConfig(0) + ".choice_count", typedConfig(0) + ".choice_count: 0 is below 2 (gRFC A48)"},
	{"ClientSideWeightedRoundRobin asking for out-of-band reports", edsCluster(withLBPolicy(&cswrrv3.ClientSideWeightedRoundRobin{EnableOobLoadReport: wrapperspb.Bool(true)})),
		typedConfig(0), typedConfig(0) + `: lbkit refuses the converted config [{"weighted_round_robin":{"enableOobLoadReport":true}}]`},
	{"a RoundRobin that does not decode", edsCluster(withLBPolicy(&anypb.Any{TypeUrl: "type.googleapis.com/" + string(rr.ProtoReflect().Descriptor().FullName()), Value: []byte{0xff}})),
		typedConfig(0), typedConfig(0) + ": cannot decode envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin"},
	{"a TypedStruct that does not decode", edsCluster(withLBPolicy(&anypb.Any{TypeUrl: "type.googleapis.com/xds.type.v3.TypedStruct", Value: []byte{0xff}})),
		typedConfig(0), typedConfig(0) + ": cannot decode xds.type.v3.TypedStruct"},
	{"a TypedStruct config the policy refuses", edsCluster(withLBPolicy(typedStruct("least_request_experimental", map[string]any{"choiceCount": 1}))),
		typedConfig(0) + ".value", typedConfig(0) + `.value: lbkit refuses the converted config [{"least_request_experimental":{"choiceCount":1}}]`},
	{"a TypedStruct config of the wrong type", edsCluster(withLBPolicy(wrrLocality(typedStruct("pick_first", map[string]any{"shuffleAddressList": "yes"})))),
		typedConfig(0) + ".endpoint_picking_policy.policies[0].typed_extension_config.typed_config.value",
		typedConfig(0) + ".endpoint_picking_policy.policies[0].typed_extension_config.typed_config.value: lbkit refuses the converted config"},
	{"17 levels of WrrLocality", edsCluster(withLBPolicy(nested(17, rr))), depthPath(17),
		depthPath(17) + ": nested more than 16 levels deep (gRFC A52)"},
	{"lb_policy LOAD_BALANCING_POLICY_CONFIG without load_balancing_policy", edsCluster(withPolicy(clusterv3.Cluster_LOAD_BALANCING_POLICY_CONFIG)),
		"lb_policy", "lb_policy: LOAD_BALANCING_POLICY_CONFIG without load_balancing_policy"},
}

func TestParseClusterLoadBalancingPolicyErrors(t *testing.T) { checkClusterErrors(t, lbPolicyErrors) }

// TestParseClusterLoadBalancingPolicyIsDeterministic: equal clusters give
// byte-identical configs, TypedStruct values included.
func TestParseClusterLoadBalancingPolicyIsDeterministic(t *testing.T) {
	c := edsCluster(withLBPolicy(typedStruct("least_request_experimental", map[string]any{"choiceCount": 3, "b": "x", "a": []any{1, "2"}})))
	first, err := xds.ParseCluster(c)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if again, _ := xds.ParseCluster(c); string(again.Policies.Endpoint) != string(first.Policies.Endpoint) {
			t.Fatalf("%s, then %s", first.Policies.Endpoint, again.Policies.Endpoint)
		}
	}
}
