package lb

import "math"

// LoadReport is a backend's report of its load at the end of a request:
// the fields of ORCA's xds.data.orca.v3.OrcaLoadReport (gRFC A51) that
// load-balancing policies read. A transport parses it from the response
// (adapters/nethttp from the endpoint-load-metrics header, adapters/grpcgo
// from the endpoint-load-metrics-bin trailer) and passes it in
// [DoneInfo].Load.
//
// The value is plain data: reading any field allocates nothing. Named
// holds the named metrics (ORCA's named_metrics, utilization and
// request_cost maps) as a slice that may alias the transport's buffers:
// like [DoneInfo].Metadata it is valid only during the Done call, and a
// policy that keeps it copies it (for example with [LoadReport.Clone]).
//
// Values are as the backend sent them, after the transport's validation:
// every number is finite, and utilizations, rates and counts are not
// negative (a report that breaks this is dropped by the transport, which
// counts it, and never reaches a policy).
type LoadReport struct {
	// CPUUtilization is the CPU utilization, a fraction of the available
	// CPU (may exceed 1 beyond the backend's soft limit).
	CPUUtilization float64
	// MemUtilization is the memory utilization, a fraction of the
	// available memory.
	MemUtilization float64
	// ApplicationUtilization is the backend's own measure of its load,
	// preferred to CPUUtilization by gRFC A58 when positive.
	ApplicationUtilization float64
	// QPS is the rate of requests the backend served per second
	// (ORCA's rps_fractional, or its integer rps when that is absent).
	QPS float64
	// EPS is the rate of requests that failed per second.
	EPS float64
	// Named holds the named metrics, in the order the backend sent them
	// (maps in the binary and JSON forms come in unspecified order).
	Named []NamedMetric
}

// NamedMetricKind says which OrcaLoadReport map a [NamedMetric] came
// from.
type NamedMetricKind int8

const (
	// NamedMetricNamed is an entry of named_metrics.
	NamedMetricNamed NamedMetricKind = iota
	// NamedMetricUtilization is an entry of utilization (a fraction).
	NamedMetricUtilization
	// NamedMetricRequestCost is an entry of request_cost.
	NamedMetricRequestCost
)

// String returns "named_metrics", "utilization" or "request_cost": the
// OrcaLoadReport map.
func (k NamedMetricKind) String() string {
	switch k {
	case NamedMetricUtilization:
		return "utilization"
	case NamedMetricRequestCost:
		return "request_cost"
	default:
		return "named_metrics"
	}
}

// NamedMetric is one entry of a load report's maps.
type NamedMetric struct {
	// Kind is the map the entry came from.
	Kind NamedMetricKind
	// Name is the key.
	Name string
	// Value is the value, finite.
	Value float64
}

// Metric returns the value of the named metric of kind k called name, and
// whether the report has it. It allocates nothing and is O(len(Named)).
func (r *LoadReport) Metric(k NamedMetricKind, name string) (float64, bool) {
	for _, m := range r.Named {
		if m.Kind == k && m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// Clone returns a copy of r whose Named slice r's owner cannot change, for
// a policy that keeps a report after Done returns.
func (r LoadReport) Clone() LoadReport {
	if r.Named != nil {
		r.Named = append([]NamedMetric(nil), r.Named...)
	}
	return r
}

// Valid reports whether every number of r is finite and not negative:
// what a transport checks before it passes a report on. Named metrics of
// kind [NamedMetricNamed] may be negative (ORCA does not bound them).
func (r *LoadReport) Valid() bool {
	for _, v := range [...]float64{r.CPUUtilization, r.MemUtilization, r.ApplicationUtilization, r.QPS, r.EPS} {
		if !nonNegative(v) {
			return false
		}
	}
	for _, m := range r.Named {
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || (m.Kind != NamedMetricNamed && m.Value < 0) {
			return false
		}
	}
	return true
}

// nonNegative reports whether v is finite and at least 0.
func nonNegative(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }
