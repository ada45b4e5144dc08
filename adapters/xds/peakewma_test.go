package xds_test

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/anypb"
)

// Envoy's PeakEwma (contrib/envoy/extensions/load_balancing_policies/
// peak_ewma/v3alpha/peak_ewma.proto) by its field numbers, encoded here
// with protowire rather than through the descriptor the adapter decodes
// it with.
const (
	pewDecayTime           = 1 // google.protobuf.Duration
	pewAggregationInterval = 2 // google.protobuf.Duration
	pewMaxSamplesPerHost   = 3 // google.protobuf.UInt32Value
	pewDefaultRTT          = 4 // google.protobuf.Duration
	pewPenaltyValue        = 5 // google.protobuf.DoubleValue
)

// peakEwma is an Any of type PeakEwma whose value is fields, concatenated.
func peakEwma(fields ...[]byte) *anypb.Any {
	var v []byte
	for _, f := range fields {
		v = append(v, f...)
	}
	return &anypb.Any{TypeUrl: "type.googleapis.com/envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma", Value: v}
}

// pewMessage is field num holding the message whose encoding is inner.
func pewMessage(num protowire.Number, inner []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), inner)
}

// pewDuration is field num holding a google.protobuf.Duration.
func pewDuration(num protowire.Number, secs int64, nanos int32) []byte {
	var d []byte
	if secs != 0 {
		d = protowire.AppendVarint(protowire.AppendTag(d, 1, protowire.VarintType), uint64(secs))
	}
	if nanos != 0 {
		d = protowire.AppendVarint(protowire.AppendTag(d, 2, protowire.VarintType), uint64(int64(nanos)))
	}
	return pewMessage(num, d)
}

// Envoy's PeakEwma maps to peak_ewma_experimental: decay_time and
// default_rtt carried, unset fields left to lbkit's defaults (Envoy's),
// the fields that tune Envoy's sample buffers and its penalty for hosts
// without measurements ignored and listed, a field the proto does not
// know (a newer Envoy's) skipped as proto3 skips it.
func TestParseClusterPeakEwma(t *testing.T) {
	agg := pewDuration(pewAggregationInterval, 0, 1e8)
	samples := pewMessage(pewMaxSamplesPerHost, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 500))
	penalty := pewMessage(pewPenaltyValue, protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), 0x4130000000000000)) // 1e6
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 42, protowire.VarintType), 1)
	checkLBPolicies(t, []lbPolicyCase{
		{"unset fields: lbkit's defaults", edsCluster(withLBPolicy(peakEwma())), `[{"peak_ewma_experimental":{}}]`, true, nil},
		{"decay_time and default_rtt", edsCluster(withLBPolicy(peakEwma(pewDuration(pewDecayTime, 5, 0), pewDuration(pewDefaultRTT, 0, 3e7)))),
			`[{"peak_ewma_experimental":{"decayTime":"5s","defaultRtt":"0.03s"}}]`, true, nil},
		{"a repeated message field merges, as protobuf's decoding does", edsCluster(withLBPolicy(peakEwma(pewDuration(pewDecayTime, 5, 0), pewDuration(pewDecayTime, 0, 5e8)))),
			`[{"peak_ewma_experimental":{"decayTime":"5.5s"}}]`, true, nil},
		{"a field of the wrong wire type is an unknown field, as protobuf decodes it",
			edsCluster(withLBPolicy(peakEwma(protowire.AppendVarint(protowire.AppendTag(nil, pewDecayTime, protowire.VarintType), 5)))),
			`[{"peak_ewma_experimental":{}}]`, true, nil},
		{"under WrrLocality", edsCluster(withLBPolicy(wrrLocality(peakEwma(pewDuration(pewDecayTime, 20, 0))))),
			`[{"peak_ewma_experimental":{"decayTime":"20s"}}]`, false, nil},
		{"Envoy's buffer sizes and penalty ignored and listed", edsCluster(withLBPolicy(peakEwma(agg, samples, penalty, unknown))),
			`[{"peak_ewma_experimental":{}}]`, true, []string{
				typedConfig(0) + ".aggregation_interval: ignored", typedConfig(0) + ".max_samples_per_host: ignored",
				typedConfig(0) + ".penalty_value: ignored (Envoy's cost of a host without measurements"}},
	})
}

// A PeakEwma that does not decode, or whose durations are invalid,
// negative, zero or outside lbkit's range, NACKs the cluster naming the
// field; it is not passed over for the next entry.
func TestParseClusterPeakEwmaErrors(t *testing.T) {
	at := typedConfig(0)
	checkClusterErrors(t, []clusterError{
		{"not protobuf", edsCluster(withLBPolicy(peakEwma([]byte{0xff}), rr)), at,
			at + ": cannot decode envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma"},
		{"negative decay_time", edsCluster(withLBPolicy(peakEwma(pewDuration(pewDecayTime, -1, 0)))), at + ".decay_time",
			at + ".decay_time: -1s is negative"},
		{"decay_time with nanos beyond a second", edsCluster(withLBPolicy(peakEwma(pewDuration(pewDecayTime, 1, 2e9)))), at + ".decay_time",
			at + ".decay_time: invalid google.protobuf.Duration"},
		{"zero default_rtt", edsCluster(withLBPolicy(peakEwma(pewDuration(pewDefaultRTT, 0, 0)))), at + ".default_rtt",
			at + ".default_rtt: 0s: lbkit requires an interval above zero"},
		{"decay_time below lbkit's 100 ms", edsCluster(withLBPolicy(peakEwma(pewDuration(pewDecayTime, 0, 5e7)))), at,
			at + `: lbkit refuses the converted config [{"peak_ewma_experimental":{"decayTime":"0.05s"}}]`},
		{"default_rtt above lbkit's hour", edsCluster(withLBPolicy(wrrLocality(peakEwma(pewDuration(pewDefaultRTT, 7200, 0))))),
			at + ".endpoint_picking_policy.policies[0].typed_extension_config.typed_config",
			at + `.endpoint_picking_policy.policies[0].typed_extension_config.typed_config: lbkit refuses the converted config [{"peak_ewma_experimental":{"defaultRtt":"7200s"}}]`},
	})
}

// Envoy's PeakEwma has no slow_start_config (Envoy's slow start is
// RoundRobin's and LeastRequest's; docs/choices.md), so a control plane
// reaches peak_ewma_experimental's slow start through a TypedStruct naming
// the policy, whose value is lbkit's JSON config as it is (gRFC A52); a
// slow start the policy refuses NACKs the cluster at the value.
func TestPeakEwmaSlowStartThroughTypedStruct(t *testing.T) {
	ss := map[string]any{"slowStartConfig": map[string]any{"slowStartWindow": "30s", "aggression": 2, "minWeightPercent": 5}}
	checkLBPolicies(t, []lbPolicyCase{
		{"TypedStruct of peak_ewma_experimental with slowStartConfig", edsCluster(withLBPolicy(typedStruct("peak_ewma_experimental", ss))),
			`[{"peak_ewma_experimental":{"slowStartConfig":{"aggression":2,"minWeightPercent":5,"slowStartWindow":"30s"}}}]`, true, nil},
		{"under WrrLocality", edsCluster(withLBPolicy(wrrLocality(typedStruct("type.googleapis.com/peak_ewma_experimental", ss)))),
			`[{"peak_ewma_experimental":{"slowStartConfig":{"aggression":2,"minWeightPercent":5,"slowStartWindow":"30s"}}}]`, false, nil},
	})
	at := typedConfig(0) + ".value"
	checkClusterErrors(t, []clusterError{
		{"a zero slowStartWindow", edsCluster(withLBPolicy(typedStruct("peak_ewma_experimental", map[string]any{"slowStartConfig": map[string]any{"slowStartWindow": "0s"}}))),
			at, at + `: lbkit refuses the converted config [{"peak_ewma_experimental":{"slowStartConfig":{"slowStartWindow":"0s"}}}]`},
	})
}
