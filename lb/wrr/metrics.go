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
	// MetricEndpointWeightStale counts, per weighted_round_robin picker
	// built, the READY endpoints whose last load report is older than the
	// weight expiration period.
	MetricEndpointWeightStale = lb.RegisterMetric(&lb.MetricDesc{Name: "grpc.lb.wrr.endpoint_weight_stale", Unit: "{endpoint}",
		Description: "Number of endpoints from each scheduler update whose latest weight is older than the expiration period.",
		Labels:      []string{lb.LabelTarget, lb.LabelLocality}})
	// MetricEndpointsInSlowStart counts, per weighted_round_robin picker
	// built, the READY endpoints in their slow start window (gRFC A100's
	// draft).
	MetricEndpointsInSlowStart = lb.RegisterMetric(&lb.MetricDesc{Name: "grpc.lb.wrr.endpoints_in_slow_start", Unit: "{endpoint}",
		Description: "Number of endpoints currently in the slow start period. This is incremented when a new scheduler is created.",
		Labels:      []string{lb.LabelTarget, lb.LabelLocality}})
	// MetricEndpointWeights records, per weighted_round_robin picker
	// built, each READY endpoint's weight from its load reports (0 when
	// it has no usable one).
	MetricEndpointWeights = lb.RegisterMetric(&lb.MetricDesc{Name: "grpc.lb.wrr.endpoint_weights", Unit: "{weight}", Kind: lb.MetricHistogram,
		Description: "Weight of each endpoint, recorded on every scheduler update. Endpoints without usable weights will be recorded as weight 0.",
		Labels:      []string{lb.LabelTarget, lb.LabelLocality}})
)

// buildLoadMetrics resolves the load report metrics' handles.
func (b *balancer) buildLoadMetrics(r lb.MetricsRecorder, target string) {
	b.stale = r.Counter(MetricEndpointWeightStale, target, "")
	b.weights = lb.HistogramOf(r, MetricEndpointWeights, target, "")
}

// recordMetrics records A78's metrics for a schedule with weights
// (reported weights raw; counts from scheduleWeights): endpoints without a
// usable weight, stale ones, each reported weight, and a fallback when
// every weight is equal (round robin in effect).
func (b *balancer) recordMetrics(weights []uint32, raw []float64, c weightCounts) {
	equal := true
	for i, w := range weights {
		equal = equal && w == weights[0]
		b.weights.Record(raw[i])
	}
	b.notYetUsable.Add(c.notYetUsable)
	b.stale.Add(c.stale)
	if equal {
		b.rrFallback.Add(1)
	}
}
