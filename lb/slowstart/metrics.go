package slowstart

import "github.com/lbkit/lbkit/lb"

// MetricEndpointsInSlowStart counts, per READY picker that round_robin,
// least_request_experimental or peak_ewma_experimental builds, its
// endpoints in their slow start window: gRFC A100's
// grpc.lb.wrr.endpoints_in_slow_start (which weighted_round_robin records
// under that name) for the other policies with slow start, labelled with
// the policy's name. docs/observability.md describes it.
var MetricEndpointsInSlowStart = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.lb.endpoints_in_slow_start", Unit: "{endpoint}",
	Description: "Number of endpoints in their slow start period, added by each picker a policy builds.",
	Labels:      []string{lb.LabelTarget, lb.LabelLocality, lb.LabelPolicy}})

// PolicyCounter returns the handle of [MetricEndpointsInSlowStart] for a
// policy named policy built on cc with opts (opts.Metrics, after
// [lb.BuildOptions.WithDefaults]), for [Tracker.CountPickers].
func PolicyCounter(cc lb.ClientConn, opts lb.BuildOptions, policy string) lb.Counter {
	return opts.Metrics.Counter(MetricEndpointsInSlowStart, cc.Target(), "", policy)
}

// CountPickers makes [Tracker.RecordPicker] add to c, and returns t. Without
// it, RecordPicker records nothing.
func (t *Tracker[K]) CountPickers(c lb.Counter) *Tracker[K] {
	t.pickers = c
	return t
}

// RecordPicker adds to the counter set by [Tracker.CountPickers] how many of
// ready, the endpoints of a picker the policy just built, are in their slow
// start window ([Tracker.InWindow]), and returns that number. A policy
// calls it once per READY picker it builds, as gRFC A100 counts per
// scheduler made; while nothing ramps it costs one length check.
func (t *Tracker[K]) RecordPicker(ready []K) int64 {
	if !t.Ramping() {
		return 0
	}
	n := int64(0)
	for _, k := range ready {
		if t.InWindow(k) {
			n++
		}
	}
	if t.pickers != nil {
		t.pickers.Add(n)
	}
	return n
}
