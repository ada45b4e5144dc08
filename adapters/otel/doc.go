// Package otel records lbkit's metrics into OpenTelemetry.
//
// [NewRecorder] returns an [lb.MetricsRecorder] that creates one
// OpenTelemetry instrument per lbkit metric (an Int64Counter for a counter,
// an Int64Gauge for a gauge) on a meter of the given MeterProvider, and
// binds each handle lbkit asks for to its label values as an attribute set.
// Give it to a channel with conn.WithMetricsRecorder:
//
//	rec, err := otel.NewRecorder(provider)
//	ch, err := conn.New(target, conn.WithMetricsRecorder(rec))
//
// The metrics, their units and labels are listed by [lb.MetricDescs] and in
// docs/observability.md. The package lives in its own module so that the
// core module does not depend on OpenTelemetry.
package otel
