package xds_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/clusterimpl"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/outlierdetection"
	_ "github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	_ "github.com/lbkit/lbkit/lb/weightedtarget"
	"github.com/lbkit/lbkit/lb/wrr"
)

// edsCluster returns a valid EDS cluster "c" over ADS, changed by mods.
func edsCluster(mods ...func(*clusterv3.Cluster)) *clusterv3.Cluster {
	c := &clusterv3.Cluster{
		Name:                 "c",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func withType(t clusterv3.Cluster_DiscoveryType) func(*clusterv3.Cluster) {
	return func(c *clusterv3.Cluster) { c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: t} }
}

func withPolicy(p clusterv3.Cluster_LbPolicy) func(*clusterv3.Cluster) {
	return func(c *clusterv3.Cluster) { c.LbPolicy = p }
}

func withRingHash(rh *clusterv3.Cluster_RingHashLbConfig) func(*clusterv3.Cluster) {
	return func(c *clusterv3.Cluster) {
		c.LbPolicy = clusterv3.Cluster_RING_HASH
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: rh}
	}
}

func u64(v uint64) *wrapperspb.UInt64Value { return wrapperspb.UInt64(v) }

func withLeastRequest(lr *clusterv3.Cluster_LeastRequestLbConfig) func(*clusterv3.Cluster) {
	return func(c *clusterv3.Cluster) {
		c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
		c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: lr}
	}
}

func withOutlierDetection(od *clusterv3.OutlierDetection) func(*clusterv3.Cluster) {
	return func(c *clusterv3.Cluster) { c.OutlierDetection = od }
}

func u32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

// validClusters are clusters ParseCluster accepts, with the config it must
// give (the policies as JSON; "" for none).
var validClusters = []struct {
	name           string
	cluster        *clusterv3.Cluster
	edsServiceName string
	endpoint, od   string
}{
	{"defaults: round robin over weights, no outlier detection", edsCluster(), "c",
		`[{"weighted_round_robin":{}}]`, ``},
	{"service name and self config source", edsCluster(func(c *clusterv3.Cluster) {
		c.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{
			ServiceName: "svc",
			EdsConfig:   &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Self{Self: &corev3.SelfConfigSource{}}},
		}
	}), "svc", `[{"weighted_round_robin":{}}]`, ``},
	{"round robin config without slow start", edsCluster(func(c *clusterv3.Cluster) {
		c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{}}
	}), "c", `[{"weighted_round_robin":{}}]`, ``},
	{"least request, no config: choice count 2", edsCluster(withPolicy(clusterv3.Cluster_LEAST_REQUEST)), "c",
		`[{"least_request_experimental":{"choiceCount":2}}]`, ``},
	{"least request, empty config", edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{})), "c",
		`[{"least_request_experimental":{"choiceCount":2}}]`, ``},
	{"least request, choice count 2", edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: u32(2)})), "c",
		`[{"least_request_experimental":{"choiceCount":2}}]`, ``},
	{"least request, choice count 7", edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: u32(7)})), "c",
		`[{"least_request_experimental":{"choiceCount":7}}]`, ``},
	{"least request, choice count 10", edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: u32(10)})), "c",
		`[{"least_request_experimental":{"choiceCount":10}}]`, ``},
	{"least request, choice count 11 is capped at 10", edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: u32(11)})), "c",
		`[{"least_request_experimental":{"choiceCount":10}}]`, ``},
	{"least request, choice count 2^32-1 is capped at 10", edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: u32(1<<32 - 1)})), "c",
		`[{"least_request_experimental":{"choiceCount":10}}]`, ``},
	{"outlier detection, empty: success rate on with A50's defaults", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{})), "c",
		`[{"weighted_round_robin":{}}]`, `{"successRateEjection":{}}`},
	{"outlier detection, every mapped field", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{
		Interval: dur(5 * time.Second), BaseEjectionTime: dur(1500 * time.Millisecond), MaxEjectionTime: dur(time.Minute + time.Nanosecond),
		MaxEjectionPercent:     u32(20),
		SuccessRateStdevFactor: u32(1000), EnforcingSuccessRate: u32(90), SuccessRateMinimumHosts: u32(3), SuccessRateRequestVolume: u32(40),
		FailurePercentageThreshold: u32(60), EnforcingFailurePercentage: u32(80), FailurePercentageMinimumHosts: u32(4), FailurePercentageRequestVolume: u32(30),
	})), "c", `[{"weighted_round_robin":{}}]`,
		`{"interval":"5s","baseEjectionTime":"1.5s","maxEjectionTime":"60.000000001s","maxEjectionPercent":20,` +
			`"successRateEjection":{"stdevFactor":1000,"enforcementPercentage":90,"minimumHosts":3,"requestVolume":40},` +
			`"failurePercentageEjection":{"threshold":60,"enforcementPercentage":80,"minimumHosts":4,"requestVolume":30}}`},
	{"outlier detection, enforcing_success_rate 0 disables it and its fields are ignored", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{
		EnforcingSuccessRate: u32(0), SuccessRateStdevFactor: u32(5), SuccessRateMinimumHosts: u32(1), SuccessRateRequestVolume: u32(1),
	})), "c", `[{"weighted_round_robin":{}}]`, `{}`},
	{"outlier detection, enforcing_failure_percentage 0 disables it and its fields are ignored", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{
		EnforcingSuccessRate: u32(0), EnforcingFailurePercentage: u32(0), FailurePercentageThreshold: u32(1), FailurePercentageMinimumHosts: u32(1),
	})), "c", `[{"weighted_round_robin":{}}]`, `{}`},
	{"outlier detection, failure percentage alone with defaults", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{
		EnforcingSuccessRate: u32(0), EnforcingFailurePercentage: u32(100),
	})), "c", `[{"weighted_round_robin":{}}]`, `{"failurePercentageEjection":{"enforcementPercentage":100}}`},
	{"outlier detection, zero ejection times and percent", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{
		BaseEjectionTime: dur(0), MaxEjectionTime: dur(0), MaxEjectionPercent: u32(0), EnforcingSuccessRate: u32(0),
	})), "c", `[{"weighted_round_robin":{}}]`, `{"baseEjectionTime":"0s","maxEjectionTime":"0s","maxEjectionPercent":0}`},
	{"outlier detection, fields A50 ignores", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{
		Consecutive_5Xx: u32(1), EnforcingConsecutive_5Xx: u32(100), ConsecutiveGatewayFailure: u32(2), EnforcingConsecutiveGatewayFailure: u32(100),
		SplitExternalLocalOriginErrors: true, ConsecutiveLocalOriginFailure: u32(3), EnforcingConsecutiveLocalOriginFailure: u32(100),
		EnforcingLocalOriginSuccessRate: u32(100), EnforcingFailurePercentageLocalOrigin: u32(100), MaxEjectionTimeJitter: dur(time.Second),
		SuccessfulActiveHealthCheckUnejectHost: wrapperspb.Bool(true), AlwaysEjectOneHost: wrapperspb.Bool(true), DetectDegradedHosts: wrapperspb.Bool(true),
		EnforcingSuccessRate: u32(0),
	})), "c", `[{"weighted_round_robin":{}}]`, `{}`},
	{"outlier detection with least request", edsCluster(withPolicy(clusterv3.Cluster_LEAST_REQUEST), withOutlierDetection(&clusterv3.OutlierDetection{Interval: dur(time.Second)})), "c",
		`[{"least_request_experimental":{"choiceCount":2}}]`, `{"interval":"1s","successRateEjection":{}}`},
	{"ignored fields", edsCluster(func(c *clusterv3.Cluster) {
		c.ConnectTimeout = dur(time.Second)
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{
			HealthyPanicThreshold: &typev3.Percent{Value: 70},
			LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_ZoneAwareLbConfig_{
				ZoneAwareLbConfig: &clusterv3.Cluster_CommonLbConfig_ZoneAwareLbConfig{MinClusterSize: wrapperspb.UInt64(3)},
			},
			OverrideHostStatus:        &corev3.HealthStatusSet{Statuses: []corev3.HealthStatus{corev3.HealthStatus_DRAINING}},
			ConsistentHashingLbConfig: &clusterv3.Cluster_CommonLbConfig_ConsistentHashingLbConfig{UseHostnameForHashing: true},
		}
		c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: u32(1)}}}
		c.TransportSocket = &corev3.TransportSocket{Name: "envoy.transport_sockets.tls"}
		c.LrsServer = &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Self{Self: &corev3.SelfConfigSource{}}}
		c.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"x": {}}}
		c.HealthChecks = []*corev3.HealthCheck{{Timeout: dur(time.Second)}}
		c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{}}
		c.LbSubsetConfig = &clusterv3.Cluster_LbSubsetConfig{FallbackPolicy: clusterv3.Cluster_LbSubsetConfig_NO_FALLBACK}
		c.DnsLookupFamily = clusterv3.Cluster_V6_ONLY
	}), "c", `[{"weighted_round_robin":{}}]`, ``},
	{"locality weighted lb config", edsCluster(func(c *clusterv3.Cluster) {
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{
			LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{},
		}}
	}), "c", `[{"weighted_round_robin":{}}]`, ``},
}

// TestParseClusterIgnoresWhatA48Ignores: active_request_bias of
// LEAST_REQUEST is ignored, as gRFC A48 says, and listed for the resolver to
// log; a slow_start_config without a window is no slow start, as in Envoy,
// and listed too (with a window it maps to lbkit's slow start:
// TestParseClusterSlowStart).
func TestParseClusterIgnoresWhatA48Ignores(t *testing.T) {
	c := edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{
		ActiveRequestBias: &corev3.RuntimeDouble{DefaultValue: 1, RuntimeKey: "k"},
		SlowStartConfig:   &clusterv3.Cluster_SlowStartConfig{},
	}))
	got, err := xds.ParseCluster(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Policies.Endpoint) != `[{"least_request_experimental":{"choiceCount":2}}]` {
		t.Errorf("endpoint policy %s", got.Policies.Endpoint)
	}
	if len(got.Ignored) != 2 || !strings.HasPrefix(got.Ignored[0], "least_request_lb_config.active_request_bias: ignored (gRFC A48)") ||
		!strings.HasPrefix(got.Ignored[1], "least_request_lb_config.slow_start_config: ignored: no slow_start_window") {
		t.Errorf("Ignored = %q", got.Ignored)
	}
	if plain, _ := xds.ParseCluster(edsCluster()); len(plain.Ignored) != 0 {
		t.Errorf("a plain cluster lists ignored fields %q", plain.Ignored)
	}
}

func TestParseClusterValid(t *testing.T) {
	for _, tt := range validClusters {
		t.Run(tt.name, func(t *testing.T) {
			got, err := xds.ParseCluster(tt.cluster)
			if err != nil {
				t.Fatalf("ParseCluster: %v", err)
			}
			if got.Name != tt.cluster.GetName() || got.EDSServiceName != tt.edsServiceName {
				t.Errorf("names %q, %q; want %q, %q", got.Name, got.EDSServiceName, tt.cluster.GetName(), tt.edsServiceName)
			}
			if string(got.Policies.Endpoint) != tt.endpoint {
				t.Errorf("endpoint policy\n got %s\nwant %s", got.Policies.Endpoint, tt.endpoint)
			}
			if string(got.Policies.OutlierDetection) != tt.od {
				t.Errorf("outlier detection\n got %s\nwant %s", got.Policies.OutlierDetection, tt.od)
			}
			if got.Policies.Flat {
				t.Error("lb_policy gives a tree without the locality layer")
			}
		})
	}
}

// twoPriorities is an assignment of two priorities, for the service config
// test.
var twoPriorities = &eds.ClusterLoadAssignment{ClusterName: "c", Endpoints: []eds.LocalityLbEndpoints{
	{Locality: eds.Locality{Region: "r", Zone: "a"}, LoadBalancingWeight: 2, LbEndpoints: []eds.LbEndpoint{
		{Address: "10.0.0.1", Port: 80, LoadBalancingWeight: 3}, {Address: "10.0.0.2", Port: 80}}},
	{Locality: eds.Locality{Region: "r", Zone: "b"}, LoadBalancingWeight: 1, Priority: 1, LbEndpoints: []eds.LbEndpoint{
		{Address: "10.0.1.1", Port: 80}}},
}}

// TestParseClusterConfigsParseInAServiceConfig puts every accepted
// cluster's policies, from lb_policy and from load_balancing_policy, in a
// full eds.Namer.Convert service config and parses it with lb's registry:
// every generated field is one lbkit knows. Outlier detection sits once
// per priority when set; weighted_target_experimental once per priority
// unless the policy is outside WrrLocality (Flat).
func TestParseClusterConfigsParseInAServiceConfig(t *testing.T) {
	clusters := map[string]*clusterv3.Cluster{}
	for _, tt := range validClusters {
		clusters["lb_policy: "+tt.name] = tt.cluster
	}
	for _, tt := range validLBPolicies {
		clusters["load_balancing_policy: "+tt.name] = tt.cluster
	}
	for name, c := range clusters {
		t.Run(name, func(t *testing.T) {
			cfg, err := xds.ParseCluster(c)
			if err != nil {
				t.Fatal(err)
			}
			// Only a TypedStruct's own fields may be unknown: they are
			// listed in Ignored.
			sc := checkServiceConfig(t, cfg.Policies, len(cfg.Ignored) > 0 && strings.Contains(name, "TypedStruct"))
			wantOD := len(cfg.Policies.OutlierDetection) > 0
			if got := strings.Count(sc, outlierdetection.Name); wantOD && got != 2 || !wantOD && got != 0 {
				t.Errorf("%d outlier_detection_experimental policies in %s, want one per priority iff set", got, sc)
			}
			if got := strings.Count(sc, `"weighted_target_experimental"`); cfg.Policies.Flat && got != 0 || !cfg.Policies.Flat && got != 2 {
				t.Errorf("%d weighted_target_experimental in %s, want one per priority unless flat", got, sc)
			}
		})
	}
}

// checkServiceConfig converts the twoPriorities assignment with p, parses
// the service config with lb's registry and returns its
// loadBalancingConfig. Fields the policies do not know fail the test
// unless unknownOK (a TypedStruct's, listed in Ignored).
func checkServiceConfig(t *testing.T, p eds.Policies, unknownOK bool) string {
	t.Helper()
	var n eds.Namer
	conv, err := n.Convert(twoPriorities, p)
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	var sc struct {
		LoadBalancingConfig json.RawMessage `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal(conv.State.ServiceConfig, &sc); err != nil {
		t.Fatal(err)
	}
	parsed, err := lb.ParseLoadBalancingConfig(sc.LoadBalancingConfig)
	if err != nil {
		t.Fatalf("lb.ParseLoadBalancingConfig(%s): %v", sc.LoadBalancingConfig, err)
	}
	// gRFC A32: the cluster's limit of requests in flight is always
	// enforced, by xds_cluster_impl_experimental above the priority policy.
	ci, ok := parsed.Config.(*clusterimpl.Config)
	if !ok || ci.MaxConcurrentRequests == nil || ci.ChildPolicy.Name != "priority_experimental" || len(parsed.Unknown) != 0 && !unknownOK {
		t.Errorf("parsed %q (%+v) with unknown fields %v, want xds_cluster_impl_experimental with a limit over priority_experimental", parsed.Name, parsed.Config, parsed.Unknown)
	}
	return string(sc.LoadBalancingConfig)
}

// TestParseClusterOutlierDetectionMapsA50Table checks A50's mapping
// through lbkit's parser: each Cluster field lands in its config field.
func TestParseClusterOutlierDetectionMapsA50Table(t *testing.T) {
	cfg, err := xds.ParseCluster(edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{
		Interval: dur(11 * time.Second), BaseEjectionTime: dur(12 * time.Second), MaxEjectionTime: dur(13 * time.Second),
		MaxEjectionPercent:     u32(14),
		SuccessRateStdevFactor: u32(15), EnforcingSuccessRate: u32(16), SuccessRateMinimumHosts: u32(17), SuccessRateRequestVolume: u32(18),
		FailurePercentageThreshold: u32(19), EnforcingFailurePercentage: u32(20), FailurePercentageMinimumHosts: u32(21), FailurePercentageRequestVolume: u32(22),
	})))
	if err != nil {
		t.Fatal(err)
	}
	got := parseOD(t, cfg.Policies)
	want := outlierdetection.Config{Detection: outlierdetection.Detection{
		Interval: 11 * time.Second, BaseEjectionTime: 12 * time.Second, MaxEjectionTime: 13 * time.Second, MaxEjectionPercent: 14,
		SuccessRateEjection:       &outlierdetection.SuccessRateEjection{StdevFactor: 15, EnforcementPercentage: 16, MinimumHosts: 17, RequestVolume: 18},
		FailurePercentageEjection: &outlierdetection.FailurePercentageEjection{Threshold: 19, EnforcementPercentage: 20, MinimumHosts: 21, RequestVolume: 22},
	}}
	checkOD(t, got, want)

	// Unset fields take A50's defaults, which are Envoy's.
	cfg, err = xds.ParseCluster(edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{EnforcingFailurePercentage: u32(1)})))
	if err != nil {
		t.Fatal(err)
	}
	checkOD(t, parseOD(t, cfg.Policies), outlierdetection.Config{Detection: outlierdetection.Detection{
		Interval: outlierdetection.DefaultInterval, BaseEjectionTime: outlierdetection.DefaultBaseEjectionTime,
		MaxEjectionTime: outlierdetection.DefaultMaxEjectionTime, MaxEjectionPercent: outlierdetection.DefaultMaxEjectionPercent,
		SuccessRateEjection: &outlierdetection.SuccessRateEjection{
			StdevFactor: outlierdetection.DefaultStdevFactor, EnforcementPercentage: outlierdetection.DefaultSuccessRateEnforcementPercentage,
			MinimumHosts: outlierdetection.DefaultSuccessRateMinimumHosts, RequestVolume: outlierdetection.DefaultSuccessRateRequestVolume,
		},
		FailurePercentageEjection: &outlierdetection.FailurePercentageEjection{
			Threshold: outlierdetection.DefaultFailurePercentageThreshold, EnforcementPercentage: 1,
			MinimumHosts: outlierdetection.DefaultFailurePercentageMinimumHosts, RequestVolume: outlierdetection.DefaultFailurePercentageRequestVolume,
		},
	}})
}

// parseOD parses p's outlier detection, with p's endpoint policy as its
// child, through lb's registry.
func parseOD(t *testing.T, p eds.Policies) *outlierdetection.Config {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p.OutlierDetection, &obj); err != nil {
		t.Fatal(err)
	}
	obj["childPolicy"] = p.Endpoint
	raw, err := json.Marshal([]map[string]map[string]json.RawMessage{{outlierdetection.Name: obj}})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := lb.ParsePolicyList(raw)
	if err != nil {
		t.Fatalf("parsing %s: %v", raw, err)
	}
	c, err := lb.ConfigOf[*outlierdetection.Config](outlierdetection.Name, parsed.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func checkOD(t *testing.T, got *outlierdetection.Config, want outlierdetection.Config) {
	t.Helper()
	if got.Interval != want.Interval || got.BaseEjectionTime != want.BaseEjectionTime || got.MaxEjectionTime != want.MaxEjectionTime || got.MaxEjectionPercent != want.MaxEjectionPercent {
		t.Errorf("durations and percent %v %v %v %d, want %v %v %v %d", got.Interval, got.BaseEjectionTime, got.MaxEjectionTime, got.MaxEjectionPercent,
			want.Interval, want.BaseEjectionTime, want.MaxEjectionTime, want.MaxEjectionPercent)
	}
	if (got.SuccessRateEjection == nil) != (want.SuccessRateEjection == nil) || got.SuccessRateEjection != nil && *got.SuccessRateEjection != *want.SuccessRateEjection {
		t.Errorf("success rate %+v, want %+v", got.SuccessRateEjection, want.SuccessRateEjection)
	}
	if (got.FailurePercentageEjection == nil) != (want.FailurePercentageEjection == nil) || got.FailurePercentageEjection != nil && *got.FailurePercentageEjection != *want.FailurePercentageEjection {
		t.Errorf("failure percentage %+v, want %+v", got.FailurePercentageEjection, want.FailurePercentageEjection)
	}
}

// TestParseClusterLeafPolicies checks that the endpoint policies parse to
// the configs A48 asks for.
func TestParseClusterLeafPolicies(t *testing.T) {
	for _, tc := range []struct {
		count *wrapperspb.UInt32Value
		want  uint32
	}{{nil, 2}, {u32(2), 2}, {u32(5), 5}, {u32(10), 10}, {u32(11), 10}, {u32(1000), 10}} {
		cfg, err := xds.ParseCluster(edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: tc.count})))
		if err != nil {
			t.Fatal(err)
		}
		p, err := lb.ParsePolicyList(cfg.Policies.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := p.Config.(leastrequest.Config); !ok || c.ChoiceCount != tc.want {
			t.Errorf("choice_count %v: config %#v, want choice count %d", tc.count, p.Config, tc.want)
		}
	}
	cfg, err := xds.ParseCluster(edsCluster())
	if err != nil {
		t.Fatal(err)
	}
	if p, err := lb.ParsePolicyList(cfg.Policies.Endpoint); err != nil || p.Name != wrr.Name {
		t.Errorf("ROUND_ROBIN gives %v, %v; want %s", p, err, wrr.Name)
	}
	// RING_HASH and MAGLEV (gRFC A42): one policy over each priority's
	// endpoints (Flat); A42's ring sizes set explicitly, the maximum to 8M
	// (lowered by lbkit's client-side cap); the balance factor carried.
	for _, tc := range []struct {
		cluster *clusterv3.Cluster
		want    string
	}{
		{edsCluster(withPolicy(clusterv3.Cluster_RING_HASH)), `[{"ring_hash_experimental":{"minRingSize":1024,"maxRingSize":8388608}}]`},
		{edsCluster(withRingHash(&clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: u64(64)}), func(c *clusterv3.Cluster) {
			c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{ConsistentHashingLbConfig: &clusterv3.Cluster_CommonLbConfig_ConsistentHashingLbConfig{HashBalanceFactor: u32(125)}}
		}), `[{"ring_hash_experimental":{"minRingSize":64,"maxRingSize":8388608,"hashBalanceFactor":125}}]`},
		{edsCluster(withPolicy(clusterv3.Cluster_MAGLEV)), `[{"maglev_experimental":{"tableSize":65537}}]`},
	} {
		cfg, err := xds.ParseCluster(tc.cluster)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(cfg.Policies.Endpoint); got != tc.want || !cfg.Policies.Flat {
			t.Errorf("%v: endpoint policy %s (flat %t), want %s, flat", tc.cluster.GetLbPolicy(), got, cfg.Policies.Flat, tc.want)
		}
	}
}

func TestParseClusterErrors(t *testing.T) {
	checkClusterErrors(t, []clusterError{
		{"no name", edsCluster(func(c *clusterv3.Cluster) { c.Name = "" }), "name", "name: required"},
		{"STATIC (the default type)", edsCluster(func(c *clusterv3.Cluster) { c.ClusterDiscoveryType = nil }), "type",
			"type: STATIC is not supported (lbkit supports EDS, LOGICAL_DNS and aggregate clusters)"},
		{"STRICT_DNS", edsCluster(withType(clusterv3.Cluster_STRICT_DNS)), "type", "type: STRICT_DNS is not supported (lbkit supports EDS, LOGICAL_DNS and aggregate clusters)"},
		{"LOGICAL_DNS without load_assignment", edsCluster(withType(clusterv3.Cluster_LOGICAL_DNS)), "load_assignment", "load_assignment: required for a LOGICAL_DNS cluster"},
		{"ORIGINAL_DST", edsCluster(withType(clusterv3.Cluster_ORIGINAL_DST)), "type", "type: ORIGINAL_DST is not supported (lbkit supports EDS, LOGICAL_DNS and aggregate clusters)"},
		{"aggregate cluster", edsCluster(func(c *clusterv3.Cluster) {
			c.ClusterDiscoveryType = &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{Name: "envoy.clusters.aggregate"}}
		}), "cluster_type.typed_config", `cluster_type.typed_config: required (cluster_type "envoy.clusters.aggregate")`},
		{"no eds_cluster_config", edsCluster(func(c *clusterv3.Cluster) { c.EdsClusterConfig = nil }), "eds_cluster_config.eds_config",
			"eds_cluster_config.eds_config: required: ads or self"},
		{"eds_config path", edsCluster(func(c *clusterv3.Cluster) {
			//lint:ignore SA1019 a control plane may still send the deprecated path source
			c.EdsClusterConfig.EdsConfig = &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Path{Path: "/eds.json"}}
		}), "eds_cluster_config.eds_config", "eds_cluster_config.eds_config: path is not supported (must be ads or self"},
		{"eds_config api_config_source", edsCluster(func(c *clusterv3.Cluster) {
			c.EdsClusterConfig.EdsConfig = &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{}}}
		}), "eds_cluster_config.eds_config", "eds_cluster_config.eds_config: api_config_source is not supported"},
		{"eds_config path_config_source", edsCluster(func(c *clusterv3.Cluster) {
			c.EdsClusterConfig.EdsConfig = &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{}}}
		}), "eds_cluster_config.eds_config", "eds_cluster_config.eds_config: path_config_source is not supported"},
		{"RANDOM", edsCluster(withPolicy(clusterv3.Cluster_RANDOM)), "lb_policy", "lb_policy: RANDOM is not supported (lbkit supports ROUND_ROBIN, LEAST_REQUEST, RING_HASH, MAGLEV)"},
		{"RING_HASH with MURMUR_HASH_2", edsCluster(withRingHash(&clusterv3.Cluster_RingHashLbConfig{HashFunction: clusterv3.Cluster_RingHashLbConfig_MURMUR_HASH_2})),
			"ring_hash_lb_config.hash_function", "ring_hash_lb_config.hash_function: only XX_HASH is supported (gRFC A42)"},
		{"RING_HASH above 8M", edsCluster(withRingHash(&clusterv3.Cluster_RingHashLbConfig{MaximumRingSize: u64(8388609)})),
			"ring_hash_lb_config.maximum_ring_size", "ring_hash_lb_config.maximum_ring_size: must be <= 8388608, got 8388609"},
		{"RING_HASH minimum above maximum", edsCluster(withRingHash(&clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: u64(100), MaximumRingSize: u64(10)})),
			"ring_hash_lb_config.minimum_ring_size", "ring_hash_lb_config.minimum_ring_size: must be <= maxRingSize (10), got 100"},
		{"MAGLEV table size not prime", edsCluster(withPolicy(clusterv3.Cluster_MAGLEV), func(c *clusterv3.Cluster) {
			c.LbConfig = &clusterv3.Cluster_MaglevLbConfig_{MaglevLbConfig: &clusterv3.Cluster_MaglevLbConfig{TableSize: u64(65536)}}
		}), "maglev_lb_config.table_size", "maglev_lb_config.table_size: must be a prime, got 65536"},
		{"hashing by host name", edsCluster(withPolicy(clusterv3.Cluster_MAGLEV), func(c *clusterv3.Cluster) {
			c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{ConsistentHashingLbConfig: &clusterv3.Cluster_CommonLbConfig_ConsistentHashingLbConfig{UseHostnameForHashing: true}}
		}), "common_lb_config.consistent_hashing_lb_config.use_hostname_for_hashing", "common_lb_config.consistent_hashing_lb_config.use_hostname_for_hashing: not supported"},
		{"hash balance factor below 100", edsCluster(withPolicy(clusterv3.Cluster_RING_HASH), func(c *clusterv3.Cluster) {
			c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{ConsistentHashingLbConfig: &clusterv3.Cluster_CommonLbConfig_ConsistentHashingLbConfig{HashBalanceFactor: u32(50)}}
		}), "common_lb_config.consistent_hashing_lb_config.hash_balance_factor", "common_lb_config.consistent_hashing_lb_config.hash_balance_factor: must be >= 100, got 50"},
		{"CLUSTER_PROVIDED", edsCluster(withPolicy(clusterv3.Cluster_CLUSTER_PROVIDED)), "lb_policy", "lb_policy: CLUSTER_PROVIDED is not supported"},
		{"unknown lb_policy value", edsCluster(withPolicy(42)), "lb_policy", "lb_policy: 42 is not supported"},
		{"choice count 0", edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: u32(0)})), "least_request_lb_config.choice_count",
			"least_request_lb_config.choice_count: 0 is below 2 (gRFC A48)"},
		{"choice count 1", edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: u32(1)})), "least_request_lb_config.choice_count",
			"least_request_lb_config.choice_count: 1 is below 2 (gRFC A48)"},
		{"subset load balancing", edsCluster(func(c *clusterv3.Cluster) {
			c.LbSubsetConfig = &clusterv3.Cluster_LbSubsetConfig{SubsetSelectors: []*clusterv3.Cluster_LbSubsetConfig_LbSubsetSelector{{Keys: []string{"version"}}}}
		}), "lb_subset_config", "lb_subset_config: subset load balancing is not supported"},
		{"interval 0", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{Interval: dur(0)})), "outlier_detection.interval",
			"outlier_detection.interval: 0s: lbkit requires an interval above zero"},
		{"negative interval", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{Interval: dur(-time.Second)})), "outlier_detection.interval",
			"outlier_detection.interval: -1s is negative"},
		{"negative base_ejection_time", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{BaseEjectionTime: &durationpb.Duration{Nanos: -1}})),
			"outlier_detection.base_ejection_time", "outlier_detection.base_ejection_time: -1ns is negative"},
		{"invalid max_ejection_time", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{MaxEjectionTime: &durationpb.Duration{Seconds: 1, Nanos: 1e9}})),
			"outlier_detection.max_ejection_time", "outlier_detection.max_ejection_time: invalid google.protobuf.Duration"},
		{"duration with mixed signs", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{Interval: &durationpb.Duration{Seconds: 1, Nanos: -1}})),
			"outlier_detection.interval", "outlier_detection.interval: invalid google.protobuf.Duration"},
		{"duration beyond google.protobuf.Duration", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{Interval: &durationpb.Duration{Seconds: 315_576_000_001}})),
			"outlier_detection.interval", "outlier_detection.interval: invalid google.protobuf.Duration"},
		{"duration beyond time.Duration", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{BaseEjectionTime: &durationpb.Duration{Seconds: 10_000_000_000}})),
			"outlier_detection.base_ejection_time", "outlier_detection.base_ejection_time: 10000000000s is beyond lbkit's longest duration"},
		{"max_ejection_percent 150", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{MaxEjectionPercent: u32(150)})),
			"outlier_detection.max_ejection_percent", "outlier_detection.max_ejection_percent: 150 is above 100"},
		{"enforcing_success_rate 101", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{EnforcingSuccessRate: u32(101)})),
			"outlier_detection.enforcing_success_rate", "outlier_detection.enforcing_success_rate: 101 is above 100"},
		{"failure_percentage_threshold 101, even when disabled", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{FailurePercentageThreshold: u32(101)})),
			"outlier_detection.failure_percentage_threshold", "outlier_detection.failure_percentage_threshold: 101 is above 100"},
		{"enforcing_failure_percentage 200", edsCluster(withOutlierDetection(&clusterv3.OutlierDetection{EnforcingFailurePercentage: u32(200)})),
			"outlier_detection.enforcing_failure_percentage", "outlier_detection.enforcing_failure_percentage: 200 is above 100"},
	})
}

// clusterError is a cluster ParseCluster refuses, with the field and the
// start of the error it must give.
type clusterError struct {
	name    string
	cluster *clusterv3.Cluster
	field   string
	text    string
}

// checkClusterErrors checks that ParseCluster refuses each cluster with a
// *ResourceError naming the cluster, the field and the reason.
func checkClusterErrors(t *testing.T, tests []clusterError) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := xds.ParseCluster(tt.cluster)
			if err == nil {
				t.Fatalf("ParseCluster accepted the cluster as %+v", cfg)
			}
			var re *xds.ResourceError
			if !errors.As(err, &re) {
				t.Fatalf("error %v (%T) is not a *xds.ResourceError", err, err)
			}
			if re.Path != tt.field || re.Resource != tt.cluster.GetName() {
				t.Errorf("field %q resource %q, want %q %q", re.Path, re.Resource, tt.field, tt.cluster.GetName())
			}
			if !strings.HasPrefix(err.Error(), tt.text) {
				t.Errorf("error %q, want it to start with %q", err, tt.text)
			}
		})
	}
}

func TestParseClusterNil(t *testing.T) {
	var re *xds.ResourceError
	if _, err := xds.ParseCluster(nil); !errors.As(err, &re) || re.Path != "" {
		t.Errorf("ParseCluster(nil): %v, want a *ResourceError for the whole resource", err)
	}
}

// FuzzParseCluster decodes random bytes as a Cluster and checks that
// ParseCluster never panics, that every error is a *ResourceError whose
// text starts with its field, and that every accepted cluster's policies
// parse through lb's registry.
func FuzzParseCluster(f *testing.F) {
	var seeds []*clusterv3.Cluster
	for _, tt := range validClusters {
		seeds = append(seeds, tt.cluster)
	}
	for _, tt := range validLBPolicies {
		seeds = append(seeds, tt.cluster)
	}
	for _, tt := range lbPolicyErrors {
		seeds = append(seeds, tt.cluster)
	}
	for _, c := range seeds {
		data, err := proto.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c clusterv3.Cluster
		if proto.Unmarshal(data, &c) != nil {
			return
		}
		cfg, err := xds.ParseCluster(&c)
		if err != nil {
			var re *xds.ResourceError
			if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), re.Path) {
				t.Fatalf("error %v (%T) is not a *ResourceError starting with its field", err, err)
			}
			return
		}
		leaf, err := lb.ParsePolicyList(cfg.Policies.Endpoint)
		if err != nil {
			t.Fatalf("endpoint policy %s: %v", cfg.Policies.Endpoint, err)
		}
		// Fields the endpoint policy does not know (a TypedStruct's) are
		// listed in Ignored.
		for _, u := range leaf.Unknown {
			if !slices.ContainsFunc(cfg.Ignored, func(s string) bool { return strings.Contains(s, u) }) {
				t.Fatalf("endpoint policy %s: unknown field %s not in Ignored %q", cfg.Policies.Endpoint, u, cfg.Ignored)
			}
		}
		if len(cfg.Policies.OutlierDetection) > 0 {
			_ = parseOD(t, cfg.Policies)
		}
		_ = checkServiceConfig(t, cfg.Policies, len(leaf.Unknown) > 0)
	})
}
