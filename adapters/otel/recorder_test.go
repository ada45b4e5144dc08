package otel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lbkit/lbkit/adapters/otel"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
)

func newReader(t *testing.T) (*sdkmetric.ManualReader, *otel.Recorder) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	rec, err := otel.NewRecorder(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatalf("NewRecorder: %v", err)
	}
	return reader, rec
}

// collect returns the metrics the reader holds, by name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, otel.ScopeName)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// A counter handle adds to the data point of its label values, with lbkit's
// label names as attributes and the descriptor's unit.
func TestCounterThroughManualReader(t *testing.T) {
	reader, rec := newReader(t)
	tf := rec.Counter(conn.MetricFailedPicks, "dns:///svc", "transient_failure")
	dropped := rec.Counter(conn.MetricFailedPicks, "dns:///svc", "dropped")
	tf.Add(2)
	tf.Add(1)
	dropped.Add(1)

	m, ok := collect(t, reader)[conn.MetricFailedPicks.Name]
	if !ok {
		t.Fatalf("no %s collected", conn.MetricFailedPicks.Name)
	}
	if m.Unit != "{pick}" {
		t.Errorf("unit %q, want {pick}", m.Unit)
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok || !sum.IsMonotonic {
		t.Fatalf("data %T (monotonic %v), want a monotonic Sum[int64]", m.Data, sum.IsMonotonic)
	}
	got := map[string]int64{}
	for _, dp := range sum.DataPoints {
		target, _ := dp.Attributes.Value(attribute.Key(lb.LabelTarget))
		reason, _ := dp.Attributes.Value(attribute.Key(lb.LabelReason))
		got[target.AsString()+"/"+reason.AsString()] = dp.Value
	}
	want := map[string]int64{"dns:///svc/transient_failure": 3, "dns:///svc/dropped": 1}
	if len(got) != len(want) || got["dns:///svc/transient_failure"] != 3 || got["dns:///svc/dropped"] != 1 {
		t.Fatalf("data points %v, want %v", got, want)
	}
}

// A gauge handle records its last value.
func TestGaugeThroughManualReader(t *testing.T) {
	reader, rec := newReader(t)
	desc := &lb.MetricDesc{Name: "test.gauge", Unit: "{x}", Kind: lb.MetricGauge, Labels: []string{lb.LabelTarget}}
	g := rec.Gauge(desc, "t")
	g.Set(5)
	g.Set(3)
	m := collect(t, reader)["test.gauge"]
	gauge, ok := m.Data.(metricdata.Gauge[int64])
	if !ok || len(gauge.DataPoints) != 1 || gauge.DataPoints[0].Value != 3 {
		t.Fatalf("data %+v, want one gauge point of 3", m.Data)
	}
}

// A histogram handle records each value.
func TestHistogramThroughManualReader(t *testing.T) {
	reader, rec := newReader(t)
	desc := &lb.MetricDesc{Name: "test.hist", Unit: "{x}", Kind: lb.MetricHistogram, Labels: []string{lb.LabelTarget}}
	h := rec.Histogram(desc, "t")
	h.Record(2)
	h.Record(4)
	m := collect(t, reader)["test.hist"]
	hist, ok := m.Data.(metricdata.Histogram[float64])
	if !ok || len(hist.DataPoints) != 1 || hist.DataPoints[0].Count != 2 || hist.DataPoints[0].Sum != 6 {
		t.Fatalf("data %+v, want one histogram point of 2 values summing to 6", m.Data)
	}
}

// Every lbkit metric is an instrument from the start, so a reader sees the
// whole list once each is recorded.
func TestEveryMetricHasAnInstrument(t *testing.T) {
	reader, rec := newReader(t)
	for _, d := range lb.MetricDescs() {
		vals := make([]string, len(d.Labels))
		switch d.Kind {
		case lb.MetricHistogram:
			rec.Histogram(d, vals...).Record(1)
		case lb.MetricGauge:
			rec.Gauge(d, vals...).Set(1)
		default:
			rec.Counter(d, vals...).Add(1)
		}
	}
	got := collect(t, reader)
	for _, d := range lb.MetricDescs() {
		if _, ok := got[d.Name]; !ok {
			t.Errorf("%s not collected", d.Name)
		}
	}
}

// BenchmarkCounterAdd is the cost of one Add on an OpenTelemetry-backed
// handle, beside the no-op recorder's as the baseline.
func BenchmarkCounterAdd(b *testing.B) {
	_, rec := newReader(&testing.T{})
	for _, bc := range []struct {
		name string
		c    lb.Counter
	}{
		{"nop", lb.NopMetrics().Counter(conn.MetricFailedPicks, "t", "dropped")},
		{"otel", rec.Counter(conn.MetricFailedPicks, "t", "dropped")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.c.Add(1)
			}
		})
	}
}
