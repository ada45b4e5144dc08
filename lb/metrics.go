package lb

import (
	"maps"
	"slices"
	"strings"
	"sync"
)

// MetricKind says how a metric's values combine.
type MetricKind int8

const (
	// MetricCounter is a monotonic count: [Counter.Add] with n >= 0.
	MetricCounter MetricKind = iota
	// MetricGauge is a value that goes up and down: [Gauge.Set].
	MetricGauge
	// MetricHistogram is a distribution of float values:
	// [Histogram.Record], made by [HistogramOf].
	MetricHistogram
)

// String returns "counter", "gauge" or "histogram".
func (k MetricKind) String() string {
	switch k {
	case MetricGauge:
		return "gauge"
	case MetricHistogram:
		return "histogram"
	}
	return "counter"
}

// Histogram is a distribution bound to one metric and one set of label
// values. Record is safe for concurrent use and must neither block nor
// allocate.
type Histogram interface {
	// Record adds v to the distribution.
	Record(v float64)
}

// HistogramRecorder is implemented by a [MetricsRecorder] that records
// histograms (adapters/otel's and lbtest's do). It is a separate interface
// so that recorders written before histograms keep compiling.
type HistogramRecorder interface {
	// Histogram returns the handle of histogram desc for labelValues.
	Histogram(desc *MetricDesc, labelValues ...string) Histogram
}

// HistogramOf returns r's handle of histogram desc for labelValues, or one
// that records nothing when r does not implement [HistogramRecorder].
func HistogramOf(r MetricsRecorder, desc *MetricDesc, labelValues ...string) Histogram {
	if h, ok := r.(HistogramRecorder); ok {
		return h.Histogram(desc, labelValues...)
	}
	return nopInstrument{}
}

// MetricDesc describes one metric: its name, unit, kind and the names of its
// labels, in the order label values are given to [MetricsRecorder]. The
// descriptors registered with [RegisterMetric] are listed by
// [MetricDescs]; a value of this type is never changed after it is made.
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

func (nopInstrument) Add(int64)      {}
func (nopInstrument) Set(int64)      {}
func (nopInstrument) Record(float64) {}

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
	// LabelAddress is an endpoint's address, such as "10.0.0.1:443".
	LabelAddress = "lbkit.address"
	// LabelCluster is the cluster a policy serves (the xDS cluster or the
	// EDS assignment's cluster_name), such as "backend".
	LabelCluster = "lbkit.cluster"
	// LabelDropCategory is a drop_overloads category, such as "throttle".
	LabelDropCategory = "lbkit.drop_category"
	// LabelPolicy is a load balancing policy's registered name, such as
	// "round_robin".
	LabelPolicy = "lbkit.policy"
)

// metricRegistry holds every registered metric descriptor, by name: like
// the policy registry, written by package-level declarations of the
// packages that record the metrics.
var metricRegistry = struct {
	sync.Mutex
	m map[string]*MetricDesc
}{m: make(map[string]*MetricDesc)}

// RegisterMetric registers d, so that [MetricDescs] lists it, and returns
// it. Each package registers the metrics it records in a package-level
// declaration, such as
//
//	var MetricSwitches = lb.RegisterMetric(&lb.MetricDesc{...})
//
// A second descriptor under a name already registered is a programming
// error: RegisterMetric panics with a message naming the metric.
func RegisterMetric(d *MetricDesc) *MetricDesc {
	metricRegistry.Lock()
	defer metricRegistry.Unlock()
	if old, ok := metricRegistry.m[d.Name]; ok && old != d {
		panic("lb: RegisterMetric: metric " + d.Name + " registered twice")
	}
	metricRegistry.m[d.Name] = d
	return d
}

// MetricDescs returns every registered metric, sorted by name, in a new
// slice: those of the packages linked into the program (lbkit's policies
// and channel register theirs; docs/observability.md lists them).
func MetricDescs() []*MetricDesc {
	metricRegistry.Lock()
	defer metricRegistry.Unlock()
	return slices.SortedFunc(maps.Values(metricRegistry.m), func(a, b *MetricDesc) int { return strings.Compare(a.Name, b.Name) })
}
