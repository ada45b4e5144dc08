package lb

// MetricKind says how a metric's values combine.
type MetricKind int8

const (
	// MetricCounter is a monotonic count: [Counter.Add] with n >= 0.
	MetricCounter MetricKind = iota
	// MetricGauge is a value that goes up and down: [Gauge.Set].
	MetricGauge
)

// String returns "counter" or "gauge".
func (k MetricKind) String() string {
	if k == MetricGauge {
		return "gauge"
	}
	return "counter"
}

// MetricDesc describes one metric: its name, unit, kind and the names of its
// labels, in the order label values are given to [MetricsRecorder]. The
// descriptors lbkit records are listed by [MetricDescs]; a value of this
// type is never changed after it is made.
type MetricDesc struct {
	// Name is the metric's name, such as
	// "grpc.lb.pick_first.disconnections".
	Name string
	// Unit is the metric's unit in UCUM notation, such as "{attempt}".
	Unit string
	// Description says what one unit of the metric counts.
	Description string
	// Kind is counter or gauge.
	Kind MetricKind
	// Labels names the labels, in order.
	Labels []string
}

// Counter is a monotonic count bound to one metric and one set of label
// values. Add is safe for concurrent use and must neither block nor
// allocate.
type Counter interface {
	// Add adds n (>= 0) to the count.
	Add(n int64)
}

// Gauge is a value bound to one metric and one set of label values. Set is
// safe for concurrent use and must neither block nor allocate.
type Gauge interface {
	// Set records v as the current value.
	Set(v int64)
}

// MetricsRecorder makes instrument handles. Policies and the channel
// resolve their handles once, when they are built or when a label value
// first appears (never per request), and then only call Add or Set on them,
// so recording takes no lock and allocates nothing on any hot path.
//
// Counter and Gauge are called from inside the tree's serialized calls and
// from the channel's constructor; they may allocate. labelValues has one
// value per desc.Labels, in order; the recorder may keep the slice.
// Implementations must be safe for concurrent use. [NopMetrics] records
// nothing; adapters/otel records into OpenTelemetry.
type MetricsRecorder interface {
	// Counter returns the handle of counter desc for labelValues.
	Counter(desc *MetricDesc, labelValues ...string) Counter
	// Gauge returns the handle of gauge desc for labelValues.
	Gauge(desc *MetricDesc, labelValues ...string) Gauge
}

// NopMetrics returns a recorder whose handles do nothing. It is what a nil
// [BuildOptions].Metrics means.
func NopMetrics() MetricsRecorder { return nopRecorder{} }

type nopRecorder struct{}

type nopInstrument struct{}

func (nopInstrument) Add(int64) {}
func (nopInstrument) Set(int64) {}

func (nopRecorder) Counter(*MetricDesc, ...string) Counter { return nopInstrument{} }
func (nopRecorder) Gauge(*MetricDesc, ...string) Gauge     { return nopInstrument{} }

// Label names shared by lbkit's metrics.
const (
	// LabelTarget is the channel's dial target (gRFC A66's grpc.target).
	LabelTarget = "grpc.target"
	// LabelLocality is the locality (gRFC A78); lbkit sets it to the
	// weighted_target child's name when there is one, else "".
	LabelLocality = "grpc.lb.locality"
	// LabelChild is the name of a priority child.
	LabelChild = "lbkit.child"
	// LabelState is a connectivity state, such as "READY".
	LabelState = "lbkit.state"
	// LabelHealth is a health verdict: "passing" or "failing".
	LabelHealth = "lbkit.health"
	// LabelReason is why a pick failed: "transient_failure", "dropped" or
	// "deadline".
	LabelReason = "lbkit.reason"
)

// The metrics lbkit records. Names starting with "grpc." are gRFC A78's;
// the others are lbkit's own. docs/observability.md describes each.
var (
	// MetricPickFirstSucceeded counts pick_first's successful connection
	// attempts: each time it selects a SubConn that became READY.
	MetricPickFirstSucceeded = &MetricDesc{Name: "grpc.lb.pick_first.connection_attempts_succeeded", Unit: "{attempt}",
		Description: "Number of successful connection attempts.", Labels: []string{LabelTarget}}
	// MetricPickFirstFailed counts pick_first's failed connection attempts:
	// each TRANSIENT_FAILURE of one of its SubConns.
	MetricPickFirstFailed = &MetricDesc{Name: "grpc.lb.pick_first.connection_attempts_failed", Unit: "{attempt}",
		Description: "Number of failed connection attempts.", Labels: []string{LabelTarget}}
	// MetricPickFirstDisconnections counts the times pick_first's selected
	// SubConn left READY.
	MetricPickFirstDisconnections = &MetricDesc{Name: "grpc.lb.pick_first.disconnections", Unit: "{disconnection}",
		Description: "Number of times the selected subchannel becomes disconnected.", Labels: []string{LabelTarget}}
	// MetricWRRFallback counts weighted_round_robin pickers built with
	// fewer than two READY endpoints carrying a weight: round robin in
	// effect.
	MetricWRRFallback = &MetricDesc{Name: "grpc.lb.wrr.rr_fallback", Unit: "{update}",
		Description: "Number of scheduler updates in which there were not enough endpoints with valid weight, which caused the WRR policy to fall back to RR behavior.",
		Labels:      []string{LabelTarget, LabelLocality}}
	// MetricWRRNotYetUsable counts, per weighted_round_robin picker built,
	// the READY endpoints whose address carries no weight.
	MetricWRRNotYetUsable = &MetricDesc{Name: "grpc.lb.wrr.endpoint_weight_not_yet_usable", Unit: "{endpoint}",
		Description: "Number of endpoints from each scheduler update that don't yet have usable weight information.",
		Labels:      []string{LabelTarget, LabelLocality}}
	// MetricPrioritySwitches counts the times priority changed the child
	// in use; the label names the new child.
	MetricPrioritySwitches = &MetricDesc{Name: "lbkit.priority.switches", Unit: "{switch}",
		Description: "Number of times the priority policy changed the child in use.", Labels: []string{LabelTarget, LabelChild}}
	// MetricPriorityFailoverFired counts priority failover timers that
	// fired; the label names the child that failed to connect in time.
	MetricPriorityFailoverFired = &MetricDesc{Name: "lbkit.priority.failover_timer_fires", Unit: "{timer}",
		Description: "Number of failover timers that fired.", Labels: []string{LabelTarget, LabelChild}}
	// MetricOutlierEjections counts outlier_detection ejections.
	MetricOutlierEjections = &MetricDesc{Name: "lbkit.outlier_detection.ejections", Unit: "{ejection}",
		Description: "Number of addresses ejected as outliers.", Labels: []string{LabelTarget}}
	// MetricOutlierUnejections counts outlier_detection un-ejections.
	MetricOutlierUnejections = &MetricDesc{Name: "lbkit.outlier_detection.unejections", Unit: "{ejection}",
		Description: "Number of ejected addresses returned to service.", Labels: []string{LabelTarget}}
	// MetricHealthTransitions counts health verdict changes of connections,
	// by the new verdict.
	MetricHealthTransitions = &MetricDesc{Name: "lbkit.health.transitions", Unit: "{transition}",
		Description: "Number of health verdict changes of connections.", Labels: []string{LabelTarget, LabelHealth}}
	// MetricSubConnStateChanges counts connection state changes, by the new
	// state.
	MetricSubConnStateChanges = &MetricDesc{Name: "lbkit.subconn.state_changes", Unit: "{change}",
		Description: "Number of connectivity state changes of connections.", Labels: []string{LabelTarget, LabelState}}
	// MetricFailedPicks counts requests that [conn.Channel.Pick] failed, by
	// reason.
	MetricFailedPicks = &MetricDesc{Name: "lbkit.channel.failed_picks", Unit: "{pick}",
		Description: "Number of picks that failed.", Labels: []string{LabelTarget, LabelReason}}
)

// MetricDescs returns every metric lbkit records, in a new slice.
func MetricDescs() []*MetricDesc {
	return []*MetricDesc{
		MetricPickFirstSucceeded, MetricPickFirstFailed, MetricPickFirstDisconnections,
		MetricWRRFallback, MetricWRRNotYetUsable,
		MetricPrioritySwitches, MetricPriorityFailoverFired,
		MetricOutlierEjections, MetricOutlierUnejections,
		MetricHealthTransitions, MetricSubConnStateChanges, MetricFailedPicks,
	}
}
