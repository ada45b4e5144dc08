package wrr

import "github.com/lbkit/lbkit/lb"

// The metrics the policy records; docs/observability.md describes each.
var (
	// MetricRRFallback counts weighted_round_robin pickers built with
	// fewer than two READY endpoints carrying a weight: round robin in
	// effect.
	MetricRRFallback = lb.RegisterMetric(&lb.MetricDesc{Name: "grpc.lb.wrr.rr_fallback", Unit: "{update}",
		Description: "Number of scheduler updates in which there were not enough endpoints with valid weight, which caused the WRR policy to fall back to RR behavior.",
		Labels:      []string{lb.LabelTarget, lb.LabelLocality}})
	// MetricEndpointWeightNotYetUsable counts, per weighted_round_robin picker built,
	// the READY endpoints whose address carries no weight.
	MetricEndpointWeightNotYetUsable = lb.RegisterMetric(&lb.MetricDesc{Name: "grpc.lb.wrr.endpoint_weight_not_yet_usable", Unit: "{endpoint}",
		Description: "Number of endpoints from each scheduler update that don't yet have usable weight information.",
		Labels:      []string{lb.LabelTarget, lb.LabelLocality}})
)
