package xds

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/outlierdetection"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"github.com/lbkit/lbkit/lb/wrr"
)

// ClusterConfig is what lbkit takes from one CDS Cluster resource.
type ClusterConfig struct {
	// Name is the cluster's name.
	Name string
	// Kind is how the cluster finds its endpoints: EDS, LOGICAL_DNS or
	// aggregate (gRFC A37).
	Kind ClusterKind
	// EDSServiceName, for an EDS cluster, is
	// eds_cluster_config.service_name, or Name when that is empty: the
	// name of the ClusterLoadAssignment to subscribe to.
	EDSServiceName string
	// DNSHostPort, for a LOGICAL_DNS cluster, is the "host:port" to
	// resolve, from load_assignment's one endpoint (gRFC A37).
	DNSHostPort string
	// Clusters, for an aggregate cluster, are the underlying clusters in
	// priority order, as its ClusterConfig lists them (gRFC A37).
	Clusters []string
	// Policies are the endpoint policy, the outlier detection and the
	// tree's shape (Flat) for [eds.Namer.Convert].
	Policies eds.Policies
	// Ignored lists the fields set in the cluster that lbkit ignores
	// because a gRFC says to, each as "field: reason", for the resolver
	// to log: a control plane that sets them learns that they had no
	// effect.
	Ignored []string
}

// ResourceError is why lbkit cannot use an xDS resource: the client NACKs
// the resource with this error as the detail and keeps its last good
// version. It is an [lb.ConfigError] whose Path is the proto field path
// inside the resource (empty for the resource as a whole), with the
// resource's name beside it; its text is "path: reason", such as
//
//	lb_policy: RING_HASH is not supported (lbkit supports ROUND_ROBIN, LEAST_REQUEST)
//
// Test for it with errors.As.
type ResourceError struct {
	// Resource is the resource's name (for a Cluster, its name; empty if
	// it has none).
	Resource string
	lb.ConfigError
}

// fieldErrorf returns a *ResourceError at field with a formatted reason;
// ParseCluster fills in the resource's name.
func fieldErrorf(field, format string, args ...any) *ResourceError {
	return &ResourceError{ConfigError: lb.ConfigError{Path: field, Err: fmt.Errorf(format, args...)}}
}

// The endpoint policy of lb_policy ROUND_ROBIN.
var weightedRoundRobinLeaf = json.RawMessage(`[{"` + wrr.Name + `":{}}]`)

// Bounds of least_request_lb_config.choice_count (gRFC A48).
const (
	minChoiceCount = leastrequest.MinChoiceCount
	maxChoiceCount = leastrequest.MaxChoiceCount
)

// ParseCluster validates a CDS Cluster and maps it to lbkit's config. Every
// refusal is a [*ResourceError] naming the proto field; the caller NACKs
// the resource with it. docs/choices.md ("xDS clusters") gives the reasons
// below at length.
//
// # Discovery
//
// The cluster is one of the three kinds gRPC supports (gRFC A37; the
// rules are in [ClusterKind]'s documentation):
//
//   - type EDS with eds_cluster_config.eds_config set to ads or self:
//     lbkit follows its endpoints over the one ADS stream;
//   - type LOGICAL_DNS, whose load_assignment names the one host:port to
//     resolve;
//   - cluster_type envoy.clusters.aggregate, whose typed_config is an
//     envoy.extensions.clusters.aggregate.v3.ClusterConfig listing the
//     underlying clusters.
//
// STATIC, STRICT_DNS and ORIGINAL_DST types and any other cluster_type are
// refused, such as "type: STATIC is not supported (lbkit supports EDS,
// LOGICAL_DNS and aggregate clusters)".
//
// # Load balancing policy
//
// When load_balancing_policy is set it is used, and lb_policy and
// lb_config are ignored (listed in ClusterConfig.Ignored), as gRFC A52
// says. Its policies are tried in order and the first of a type lbkit
// supports is chosen; entries of other types (Random, ...) are skipped and listed in Ignored. The types lbkit
// supports, by the message name in typed_config's type_url:
//
//   - WrrLocality: the locality-weighted tree (weighted_target_experimental
//     over each priority's localities) with its endpoint_picking_policy,
//     converted by the same rules one level deeper, as the leaf. A
//     WrrLocality inside another adds nothing (in gRPC the inner one sees
//     one locality at a time).
//   - RoundRobin: [{"round_robin":{}}], which ignores endpoint weights as
//     gRPC's round_robin does. A52 gives it no configuration;
//     slow_start_config maps to lbkit's slow start (below) and
//     locality_lb_config is ignored.
//   - LeastRequest: [{"least_request_experimental":{"choiceCount":N}}] with
//     A48's choice_count rules below. active_request_bias is ignored as A48
//     says; slow_start_config maps to lbkit's slow start (below);
//     locality_lb_config, enable_full_scan and selection_method are
//     ignored, as A52 converts only choice_count.
//   - PickFirst: [{"pick_first":{"shuffleAddressList":B}}] with B from
//     shuffle_address_list (gRFC A62).
//   - RingHash: [{"ring_hash_experimental":{"minRingSize":N,"maxRingSize":M}}]
//     (gRFC A42): unset sizes are 1024 and 8,388,608 (lowered by lbkit's
//     client-side cap, 4096 by default); above 8M, or a minimum above the
//     maximum, is refused; hash_function must be XX_HASH or DEFAULT_HASH;
//     consistent_hashing_lb_config.hash_balance_factor (or the deprecated
//     field) becomes hashBalanceFactor; use_hostname_for_hashing is
//     refused.
//   - Maglev: [{"maglev_experimental":{"tableSize":N}}], N from table_size
//     (65,537 when unset; a prime up to 5,000,011), with the same
//     consistent_hashing_lb_config rules.
//   - ClientSideWeightedRoundRobin: [{"weighted_round_robin":{...}}] with
//     gRFC A58's fields that are set (enableOobLoadReport,
//     oobReportingPeriod, blackoutPeriod, weightExpirationPeriod,
//     weightUpdatePeriod, errorUtilizationPenalty): lbkit's
//     weighted_round_robin then weighs endpoints by their backends' load
//     reports. enable_oob_load_report true is NACKed (lbkit has no
//     out-of-band reporting); metric_names_for_computing_utilization,
//     slow_start_config and oob_reporting_config are ignored.
//   - xds.type.v3.TypedStruct and udpa.type.v1.TypedStruct: the policy
//     named by the TypedStruct's type_url after its last '/', with its
//     value as the config object, when that name is registered in lbkit's
//     default registry ([lb.DefaultRegistry]); otherwise the entry is
//     skipped.
//
// A policy outside WrrLocality has no locality-picking layer: it takes all
// of a priority's endpoints (Policies.Flat), as gRPC builds it. The
// Cluster is NACKed when no entry is supported (the reason names the types
// skipped), when the chosen entry does not decode or its converted config
// does not parse with lbkit's registry (no later entry is tried), and when
// WrrLocality nests more than 16 levels deep. Every such error names the
// entry's path, such as
// "load_balancing_policy.policies[1].typed_extension_config.typed_config.choice_count".
//
// Without load_balancing_policy, lb_policy chooses:
//
//   - ROUND_ROBIN (the default) gives [{"weighted_round_robin":{}}]: Envoy's
//     ROUND_ROBIN honours each endpoint's load_balancing_weight, and so does
//     lbkit's weighted_round_robin, the eds file resolver's leaf; with
//     equal weights it is round robin. round_robin_lb_config.slow_start_config
//     maps to its slow start (below).
//   - LEAST_REQUEST gives [{"least_request_experimental":{"choiceCount":N}}]
//     with N from least_request_lb_config.choice_count: 2 when unset, below
//     2 refused, above 10 lowered to 10 (gRFC A48). Endpoint weights are
//     ignored, as A48's "all weights equal" algorithm does.
//     active_request_bias is ignored, as A48 says, and listed in
//     ClusterConfig.Ignored, which the resolver logs; slow_start_config
//     maps to slow start (below).
//   - RING_HASH gives ring_hash_experimental from ring_hash_lb_config, and
//     MAGLEV maglev_experimental from maglev_lb_config, by the RingHash and
//     Maglev rules above, hash_balance_factor and use_hostname_for_hashing
//     coming from common_lb_config.consistent_hashing_lb_config. Both take
//     each priority's endpoints without a locality layer (gRFC A42), each
//     weighted by its locality's weight times its own.
//   - Any other lb_policy is refused, such as "lb_policy: RANDOM is not
//     supported (lbkit supports ROUND_ROBIN, LEAST_REQUEST, RING_HASH,
//     MAGLEV)".
//
// ROUND_ROBIN and LEAST_REQUEST give the locality-weighted tree.
//
// A slow_start_config (of either lb_config, RoundRobin or LeastRequest)
// becomes the policy's "slowStartConfig" (package slowstart, gRFC A100's
// names): slow_start_window, aggression.default_value (unset: 1) and
// min_weight_percent.value (unset: 10). Without a window, or with a zero
// one, there is no slow start, as in Envoy, and the field is listed in
// Ignored, as is aggression's runtime_key. A negative window, an
// aggression not above zero or a percent above 100 NACKs the Cluster.
// The generated leaf is parsed by lbkit's own registry, so a config lbkit
// would refuse is refused here.
//
// # Outlier detection
//
// Unset, Policies.OutlierDetection stays empty: no ejection (A50's "no-op"
// config). Set, it is mapped as gRFC A50's "xDS Integration" table says to
// an outlier_detection_experimental config without childPolicy:
// enforcing_success_rate 0 disables successRateEjection (unset means 100,
// enabled); enforcing_failure_percentage 0 or unset disables
// failurePercentageEjection; interval, base_ejection_time,
// max_ejection_time, max_ejection_percent and the success_rate_* and
// failure_percentage_* fields map to their config fields, unset ones
// taking A50's defaults. Validation follows A50: durations must be valid
// google.protobuf.Durations and not negative; max_ejection_percent,
// enforcing_success_rate, failure_percentage_threshold and
// enforcing_failure_percentage at most 100. lbkit also refuses an interval
// of 0 and durations beyond Go's time.Duration (about 292 years), and the
// mapped config must pass lbkit's outlier_detection_experimental parser.
// Ignored, as A50 says gRPC ignores them: consecutive_5xx,
// consecutive_gateway_failure, consecutive_local_origin_failure and their
// enforcing_* fields, split_external_local_origin_errors,
// enforcing_local_origin_success_rate,
// enforcing_failure_percentage_local_origin, max_ejection_time_jitter,
// successful_active_health_check_uneject_host, monitors,
// always_eject_one_host and detect_degraded_hosts.
//
// # Circuit breaking
//
// Policies.MaxConcurrentRequests is max_requests of the first
// circuit_breakers.thresholds entry of priority DEFAULT, or 1024 when
// there is none or it leaves max_requests unset: gRFC A32 enforces the
// limit always, with Envoy's default (a control plane turns it off by
// setting 4294967295). The tree then caps the cluster's requests in
// flight (xds_cluster_impl_experimental, package clusterimpl). The other
// fields of that threshold (max_connections, max_pending_requests,
// max_retries, retry_budget, ...), the other thresholds and
// per_host_thresholds are ignored, as A32 says, and listed in Ignored.
//
// # Other fields
//
// Refused, because they would change which endpoints get traffic:
// lb_subset_config with subset_selectors (subset load balancing).
// Ignored, as gRPC ignores them or because they do not choose endpoints:
// common_lb_config (locality weights are always honoured, as
// locality_weighted_lb_config asks; zone_aware_lb_config needs Envoy's
// local cluster; lbkit never routes to unhealthy endpoints, as
// healthy_panic_threshold 0; override_host_status serves filters lbkit
// does not have; consistent_hashing_lb_config counts only for RING_HASH
// and MAGLEV),
// the lb config of a policy not chosen (ring_hash_lb_config, ...),
// health_checks (health comes from EDS health_status),
// connect_timeout, max_requests_per_connection, the protocol options,
// transport_socket and transport_socket_matches (the channel's transport
// sets security), lrs_server (lbkit sends no load reports), load_assignment
// of an EDS or aggregate cluster (EDS supplies it), the dns_* fields, upstream_* fields, filters,
// metadata, preconnect_policy, and every field not named here.
//
// ParseCluster does not keep c; it may be called concurrently.
func ParseCluster(c *clusterv3.Cluster) (ClusterConfig, error) {
	if c == nil {
		return ClusterConfig{}, &ResourceError{ConfigError: lb.ConfigError{Err: errors.New("no Cluster")}}
	}
	cfg, rerr := parseCluster(c)
	if rerr != nil {
		rerr.Resource = c.GetName()
		return ClusterConfig{}, rerr
	}
	return cfg, nil
}

// parseCluster is ParseCluster's work; the error's Resource is unset.
func parseCluster(c *clusterv3.Cluster) (ClusterConfig, *ResourceError) {
	if c.GetName() == "" {
		return ClusterConfig{}, fieldErrorf("name", "required")
	}
	cfg := ClusterConfig{Name: c.GetName()}
	if err := discovery(c, &cfg); err != nil {
		return ClusterConfig{}, err
	}
	if s := c.GetLbSubsetConfig(); len(s.GetSubsetSelectors()) > 0 {
		return ClusterConfig{}, fieldErrorf("lb_subset_config", "subset load balancing is not supported (it would restrict which endpoints get traffic)")
	}
	chosen, err := endpointPolicy(c)
	if err != nil {
		return ClusterConfig{}, err
	}
	cfg.Policies.Endpoint, cfg.Policies.Flat, cfg.Ignored = chosen.leaf, !chosen.locality, chosen.ignored
	cfg.Policies.MaxConcurrentRequests = maxRequests(c)
	cfg.Ignored = append(cfg.Ignored, ignoredBreakers(c)...)
	if od := c.GetOutlierDetection(); od != nil {
		if cfg.Policies.OutlierDetection, err = outlierDetection(od, cfg.Policies.Endpoint); err != nil {
			return ClusterConfig{}, err
		}
	}
	return cfg, nil
}

// DefaultMaxRequests is gRFC A32's limit of requests in flight for a
// cluster that sets none (Envoy's default).
const DefaultMaxRequests = 1024

// maxRequests returns c's limit of requests in flight (gRFC A32): the
// max_requests of the first threshold of priority DEFAULT, else
// [DefaultMaxRequests].
func maxRequests(c *clusterv3.Cluster) *uint32 {
	n := uint32(DefaultMaxRequests)
	for _, th := range c.GetCircuitBreakers().GetThresholds() {
		if th.GetPriority() != corev3.RoutingPriority_DEFAULT {
			continue
		}
		if m := th.GetMaxRequests(); m != nil {
			n = m.GetValue()
		}
		break
	}
	return &n
}

// ignoredBreakers lists the circuit_breakers fields set in c that gRFC
// A32 ignores: every field of the DEFAULT threshold it reads but
// max_requests, the other thresholds, and per_host_thresholds.
func ignoredBreakers(c *clusterv3.Cluster) []string {
	const why = ": ignored (gRFC A32): gRPC enforces max_requests of the first DEFAULT threshold only"
	cb := c.GetCircuitBreakers()
	var ignored []string
	seenDefault := false
	for i, th := range cb.GetThresholds() {
		path := "circuit_breakers.thresholds[" + strconv.Itoa(i) + "]"
		if th.GetPriority() != corev3.RoutingPriority_DEFAULT || seenDefault {
			ignored = append(ignored, path+why)
			continue
		}
		seenDefault = true
		th.ProtoReflect().Range(func(f protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
			if name := f.Name(); name != "priority" && name != "max_requests" {
				ignored = append(ignored, path+"."+string(name)+why)
			}
			return true
		})
	}
	if len(cb.GetPerHostThresholds()) > 0 {
		ignored = append(ignored, "circuit_breakers.per_host_thresholds"+why)
	}
	return ignored
}

// checkEDS checks that c's endpoints are fetched over ADS.
func checkEDS(c *clusterv3.Cluster) *ResourceError {
	src := c.GetEdsClusterConfig().GetEdsConfig()
	switch spec := src.GetConfigSourceSpecifier().(type) {
	case *corev3.ConfigSource_Ads, *corev3.ConfigSource_Self:
		return nil
	case nil:
		return fieldErrorf("eds_cluster_config.eds_config", "required: ads or self")
	default:
		return fieldErrorf("eds_cluster_config.eds_config", "%s is not supported (must be ads or self: lbkit fetches endpoints over the ADS stream)", configSourceKind(spec))
	}
}

// configSourceKind names the config_source_specifier field that is set.
func configSourceKind(spec any) string {
	switch spec.(type) {
	case *corev3.ConfigSource_Path:
		return "path"
	case *corev3.ConfigSource_PathConfigSource:
		return "path_config_source"
	case *corev3.ConfigSource_ApiConfigSource:
		return "api_config_source"
	}
	return fmt.Sprintf("%T", spec)
}

// endpointPolicy returns the endpoint policy for c: from
// load_balancing_policy when it is set (gRFC A52), else from lb_policy.
func endpointPolicy(c *clusterv3.Cluster) (chosenPolicy, *ResourceError) {
	if lbp := c.GetLoadBalancingPolicy(); lbp != nil {
		chosen, err := loadBalancingPolicy(lbp, "load_balancing_policy", 0)
		if err != nil {
			return chosenPolicy{}, err
		}
		const instead = "ignored (gRFC A52): load_balancing_policy is set and is used instead"
		if p := c.GetLbPolicy(); p != clusterv3.Cluster_ROUND_ROBIN && p != clusterv3.Cluster_LOAD_BALANCING_POLICY_CONFIG {
			chosen.ignored = append(chosen.ignored, "lb_policy: "+instead)
		}
		m := c.ProtoReflect()
		if f := m.WhichOneof(m.Descriptor().Oneofs().ByName("lb_config")); f != nil {
			chosen.ignored = append(chosen.ignored, string(f.Name())+": "+instead)
		}
		return chosen, nil
	}
	var chosen chosenPolicy
	switch p := c.GetLbPolicy(); p {
	case clusterv3.Cluster_ROUND_ROBIN:
		chosen.leaf = weightedRoundRobinLeaf
		if ssc := c.GetRoundRobinLbConfig().GetSlowStartConfig(); ssc != nil {
			ss, ignored, err := slowStart(ssc, "round_robin_lb_config.slow_start_config")
			if err != nil {
				return chosenPolicy{}, err
			}
			chosen.leaf = policyList(wrr.Name, withSlowStart("{}", ss))
			chosen.ignored = append(chosen.ignored, ignored...)
		}
	case clusterv3.Cluster_LEAST_REQUEST:
		lr := c.GetLeastRequestLbConfig()
		var err *ResourceError
		if chosen, err = leastRequestChosen(lr, "least_request_lb_config"); err != nil {
			return chosenPolicy{}, err
		}
	case clusterv3.Cluster_RING_HASH, clusterv3.Cluster_MAGLEV:
		var err *ResourceError
		if chosen, err = legacyHashing(c); err != nil {
			return chosenPolicy{}, err
		}
	case clusterv3.Cluster_LOAD_BALANCING_POLICY_CONFIG:
		return chosenPolicy{}, fieldErrorf("lb_policy", "%s without load_balancing_policy", p)
	default:
		return chosenPolicy{}, fieldErrorf("lb_policy", "%s is not supported (lbkit supports ROUND_ROBIN, LEAST_REQUEST, RING_HASH, MAGLEV)", p)
	}
	if _, err := lb.ParsePolicyList(chosen.leaf); err != nil {
		return chosenPolicy{}, fieldErrorf("lb_policy", "lbkit refuses the endpoint policy %s: %w", chosen.leaf, err)
	}
	// RING_HASH and MAGLEV pick among all of a priority's endpoints
	// (gRFC A42): no locality layer.
	chosen.locality = c.GetLbPolicy() != clusterv3.Cluster_RING_HASH && c.GetLbPolicy() != clusterv3.Cluster_MAGLEV
	return chosen, nil
}

// What gRFC A48 says to ignore of least request's configuration.
const ignoredActiveRequestBias = "ignored (gRFC A48): it tunes weighted least request, and least_request_experimental ignores endpoint weights"

// leastRequestSource is either of Envoy's least request messages: the
// Cluster's least_request_lb_config and the LeastRequest policy.
type leastRequestSource[S slowStartSource] interface {
	GetChoiceCount() *wrapperspb.UInt32Value
	GetActiveRequestBias() *corev3.RuntimeDouble
	GetSlowStartConfig() S
}

// leastRequestChosen maps a least request config found at field to a
// least_request_experimental policy list: choice_count with gRFC A48's
// rules (2 when unset, below 2 refused, above 10 lowered to 10),
// slow_start_config to lbkit's slow start (where A48 ignores it;
// docs/choices.md), active_request_bias ignored and listed.
func leastRequestChosen[S interface {
	slowStartSource
	comparable
}](m leastRequestSource[S], field string) (chosenPolicy, *ResourceError) {
	cc := m.GetChoiceCount()
	n := uint32(leastrequest.DefaultChoiceCount)
	if cc != nil {
		n = cc.GetValue()
	}
	if n < minChoiceCount {
		return chosenPolicy{}, fieldErrorf(field+".choice_count", "%d is below %d (gRFC A48)", n, minChoiceCount)
	}
	n = min(n, maxChoiceCount)
	config := `{"choiceCount":` + strconv.FormatUint(uint64(n), 10) + `}`
	var c chosenPolicy
	if m.GetActiveRequestBias() != nil {
		c.ignored = append(c.ignored, field+".active_request_bias: "+ignoredActiveRequestBias)
	}
	var zero S
	if ssc := m.GetSlowStartConfig(); ssc != zero {
		ss, ignored, err := slowStart(ssc, field+".slow_start_config")
		if err != nil {
			return chosenPolicy{}, err
		}
		config = withSlowStart(config, ss)
		c.ignored = append(c.ignored, ignored...)
	}
	c.leaf = policyList(leastrequest.Name, config)
	return c, nil
}

// The outlier_detection_experimental config ParseCluster generates, in
// grpc-go's JSON names. Unset fields are left out so that the parser
// applies A50's defaults, which are Envoy's.
type (
	odConfig struct {
		Interval                  string           `json:"interval,omitempty"`
		BaseEjectionTime          string           `json:"baseEjectionTime,omitempty"`
		MaxEjectionTime           string           `json:"maxEjectionTime,omitempty"`
		MaxEjectionPercent        *uint32          `json:"maxEjectionPercent,omitempty"`
		SuccessRateEjection       *odAlgorithm     `json:"successRateEjection,omitempty"`
		FailurePercentageEjection *odAlgorithm     `json:"failurePercentageEjection,omitempty"`
		ChildPolicy               *json.RawMessage `json:"childPolicy,omitempty"`
	}
	// odAlgorithm is either algorithm's object; StdevFactor belongs to the
	// success rate, Threshold to the failure percentage.
	odAlgorithm struct {
		StdevFactor           *uint32 `json:"stdevFactor,omitempty"`
		Threshold             *uint32 `json:"threshold,omitempty"`
		EnforcementPercentage *uint32 `json:"enforcementPercentage,omitempty"`
		MinimumHosts          *uint32 `json:"minimumHosts,omitempty"`
		RequestVolume         *uint32 `json:"requestVolume,omitempty"`
	}
)

// outlierDetection validates od and maps it (gRFC A50, "xDS
// Integration"); leaf is the endpoint policy, used as the child when the
// result is checked with lbkit's parser.
func outlierDetection(od *clusterv3.OutlierDetection, leaf json.RawMessage) (json.RawMessage, *ResourceError) {
	var cfg odConfig
	var err *ResourceError
	durations := []struct {
		dst      *string
		d        *durationpb.Duration
		field    string
		positive bool
	}{
		{&cfg.Interval, od.GetInterval(), "interval", true},
		{&cfg.BaseEjectionTime, od.GetBaseEjectionTime(), "base_ejection_time", false},
		{&cfg.MaxEjectionTime, od.GetMaxEjectionTime(), "max_ejection_time", false},
	}
	for _, d := range durations {
		if *d.dst, err = durationJSON(d.d, "outlier_detection."+d.field, d.positive); err != nil {
			return nil, err
		}
	}
	percents := []struct {
		v     *wrapperspb.UInt32Value
		field string
	}{
		{od.GetMaxEjectionPercent(), "max_ejection_percent"},
		{od.GetEnforcingSuccessRate(), "enforcing_success_rate"},
		{od.GetFailurePercentageThreshold(), "failure_percentage_threshold"},
		{od.GetEnforcingFailurePercentage(), "enforcing_failure_percentage"},
	}
	for _, p := range percents {
		if p.v != nil && p.v.GetValue() > 100 {
			return nil, fieldErrorf("outlier_detection."+p.field, "%d is above 100", p.v.GetValue())
		}
	}
	cfg.MaxEjectionPercent = value(od.GetMaxEjectionPercent())
	if sr := od.GetEnforcingSuccessRate(); sr == nil || sr.GetValue() > 0 {
		cfg.SuccessRateEjection = &odAlgorithm{
			StdevFactor:           value(od.GetSuccessRateStdevFactor()),
			EnforcementPercentage: value(sr),
			MinimumHosts:          value(od.GetSuccessRateMinimumHosts()),
			RequestVolume:         value(od.GetSuccessRateRequestVolume()),
		}
	}
	if fp := od.GetEnforcingFailurePercentage(); fp.GetValue() > 0 {
		cfg.FailurePercentageEjection = &odAlgorithm{
			Threshold:             value(od.GetFailurePercentageThreshold()),
			EnforcementPercentage: value(fp),
			MinimumHosts:          value(od.GetFailurePercentageMinimumHosts()),
			RequestVolume:         value(od.GetFailurePercentageRequestVolume()),
		}
	}
	out, merr := json.Marshal(cfg)
	if merr != nil {
		return nil, fieldErrorf("outlier_detection", "encoding the config: %w", merr)
	}
	cfg.ChildPolicy = &leaf
	full, merr := json.Marshal([]map[string]odConfig{{outlierdetection.Name: cfg}})
	if merr == nil {
		_, merr = lb.ParsePolicyList(full)
	}
	if merr != nil {
		return nil, fieldErrorf("outlier_detection", "lbkit refuses the mapped config %s: %w", out, merr)
	}
	return out, nil
}

// value returns a pointer to v's value, or nil for an unset v.
func value(v *wrapperspb.UInt32Value) *uint32 {
	if v == nil {
		return nil
	}
	x := v.GetValue()
	return &x
}

// maxDurationSeconds is the most whole seconds a time.Duration holds.
const maxDurationSeconds = math.MaxInt64 / int64(time.Second)

// durationJSON validates d (A50: a valid google.protobuf.Duration, not
// negative; lbkit: within time.Duration, and above zero when positive) and
// returns its proto3 JSON form, such as "10s" or "0.5s"; "" for an unset d.
func durationJSON(d *durationpb.Duration, field string, positive bool) (string, *ResourceError) {
	if d == nil {
		return "", nil
	}
	secs, nanos := d.GetSeconds(), d.GetNanos()
	switch {
	case d.CheckValid() != nil:
		return "", fieldErrorf(field, "invalid google.protobuf.Duration: %v", d.CheckValid())
	case secs < 0 || nanos < 0:
		return "", fieldErrorf(field, "%s is negative", d.AsDuration())
	case secs > maxDurationSeconds || (secs == maxDurationSeconds && int64(nanos) > math.MaxInt64%int64(time.Second)):
		return "", fieldErrorf(field, "%ds is beyond lbkit's longest duration (about 292 years)", secs)
	case positive && secs == 0 && nanos == 0:
		return "", fieldErrorf(field, "0s: lbkit requires an interval above zero")
	}
	s := strconv.FormatInt(secs, 10)
	if nanos != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%09d", nanos), "0")
	}
	return s + "s", nil
}
