package xds_test

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"
	least_requestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	round_robinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lbkit/lbkit/adapters/xds"
)

// withRoundRobinSlowStart sets lb_policy ROUND_ROBIN's slow_start_config.
func withRoundRobinSlowStart(ss *clusterv3.Cluster_SlowStartConfig) func(*clusterv3.Cluster) {
	return func(c *clusterv3.Cluster) {
		c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: ss}}
	}
}

// TestParseClusterSlowStart: slow_start_config maps to lbkit's
// slowStartConfig (gRFC A100's names) wherever Envoy has it: lb_policy
// ROUND_ROBIN's and LEAST_REQUEST's lb_config, and the RoundRobin and
// LeastRequest policies of load_balancing_policy; unset aggression and
// min_weight_percent take Envoy's defaults (1 and 10); a runtime_key is
// listed as ignored.
func TestParseClusterSlowStart(t *testing.T) {
	full := &commonv3.SlowStartConfig{SlowStartWindow: dur(30 * time.Second),
		Aggression: &corev3.RuntimeDouble{DefaultValue: 1.5}, MinWeightPercent: &typev3.Percent{Value: 5}}
	for _, tt := range []struct {
		name, endpoint string
		cluster        *clusterv3.Cluster
		ignored        []string
	}{
		{"ROUND_ROBIN", `[{"weighted_round_robin":{"slowStartConfig":{"slowStartWindow":"30s","aggression":1,"minWeightPercent":10}}}]`,
			edsCluster(withRoundRobinSlowStart(&clusterv3.Cluster_SlowStartConfig{SlowStartWindow: dur(30 * time.Second)})), nil},
		{"ROUND_ROBIN with a runtime key", `[{"weighted_round_robin":{"slowStartConfig":{"slowStartWindow":"0.5s","aggression":2,"minWeightPercent":0}}}]`,
			edsCluster(withRoundRobinSlowStart(&clusterv3.Cluster_SlowStartConfig{SlowStartWindow: dur(500 * time.Millisecond),
				Aggression: &corev3.RuntimeDouble{DefaultValue: 2, RuntimeKey: "k"}, MinWeightPercent: &typev3.Percent{}})),
			[]string{"round_robin_lb_config.slow_start_config.aggression.runtime_key: ignored (lbkit has no runtime)"}},
		{"LEAST_REQUEST", `[{"least_request_experimental":{"choiceCount":3,"slowStartConfig":{"slowStartWindow":"60s","aggression":1,"minWeightPercent":50}}}]`,
			edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: u32(3),
				SlowStartConfig: &clusterv3.Cluster_SlowStartConfig{SlowStartWindow: dur(time.Minute), MinWeightPercent: &typev3.Percent{Value: 50}}})), nil},
		{"RoundRobin policy", `[{"round_robin":{"slowStartConfig":{"slowStartWindow":"30s","aggression":1.5,"minWeightPercent":5}}}]`,
			edsCluster(withLBPolicy(&round_robinv3.RoundRobin{SlowStartConfig: full})), nil},
		{"LeastRequest policy", `[{"least_request_experimental":{"choiceCount":2,"slowStartConfig":{"slowStartWindow":"30s","aggression":1.5,"minWeightPercent":5}}}]`,
			edsCluster(withLBPolicy(&least_requestv3.LeastRequest{SlowStartConfig: full})), nil},
		{"zero window: no slow start", `[{"round_robin":{}}]`,
			edsCluster(withLBPolicy(&round_robinv3.RoundRobin{SlowStartConfig: &commonv3.SlowStartConfig{SlowStartWindow: dur(0)}})),
			[]string{typedConfig(0) + ".slow_start_config: ignored: no slow_start_window"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := xds.ParseCluster(tt.cluster)
			if err != nil {
				t.Fatalf("ParseCluster: %v", err)
			}
			if string(got.Policies.Endpoint) != tt.endpoint {
				t.Errorf("endpoint policy %s, want %s", got.Policies.Endpoint, tt.endpoint)
			}
			if len(got.Ignored) != len(tt.ignored) {
				t.Fatalf("Ignored = %q, want %q", got.Ignored, tt.ignored)
			}
			for i, want := range tt.ignored {
				if len(got.Ignored[i]) < len(want) || got.Ignored[i][:len(want)] != want {
					t.Errorf("Ignored[%d] = %q, want it to start with %q", i, got.Ignored[i], want)
				}
			}
		})
	}
}

// TestParseClusterSlowStartErrors: a negative window, an aggression not
// above zero and a percent above 100 NACK the cluster, naming the field.
func TestParseClusterSlowStartErrors(t *testing.T) {
	checkClusterErrors(t, []clusterError{
		{"negative window", edsCluster(withRoundRobinSlowStart(&clusterv3.Cluster_SlowStartConfig{SlowStartWindow: dur(-time.Second)})),
			"round_robin_lb_config.slow_start_config.slow_start_window", "round_robin_lb_config.slow_start_config.slow_start_window: -1s is negative"},
		{"invalid window", edsCluster(withRoundRobinSlowStart(&clusterv3.Cluster_SlowStartConfig{SlowStartWindow: &durationpb.Duration{Seconds: 1, Nanos: -1}})),
			"round_robin_lb_config.slow_start_config.slow_start_window", "round_robin_lb_config.slow_start_config.slow_start_window: invalid"},
		{"aggression 0", edsCluster(withLeastRequest(&clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: &clusterv3.Cluster_SlowStartConfig{
			SlowStartWindow: dur(time.Second), Aggression: &corev3.RuntimeDouble{}}})),
			"least_request_lb_config.slow_start_config.aggression.default_value", "least_request_lb_config.slow_start_config.aggression.default_value: must be positive"},
		{"min_weight_percent 101", edsCluster(withLBPolicy(&round_robinv3.RoundRobin{SlowStartConfig: &commonv3.SlowStartConfig{
			SlowStartWindow: dur(time.Second), MinWeightPercent: &typev3.Percent{Value: 101}}})),
			typedConfig(0) + ".slow_start_config.min_weight_percent.value", typedConfig(0) + ".slow_start_config.min_weight_percent.value: must be from 0 to 100"},
	})
}
