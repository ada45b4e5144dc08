package otel

import (
	"context"
	"fmt"
	"sync"

	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/lbkit/lbkit/lb"
)

// ScopeName is the instrumentation scope of the meter the recorder uses.
const ScopeName = "github.com/lbkit/lbkit"

// Recorder is an [lb.MetricsRecorder] that records into OpenTelemetry. It is
// safe for concurrent use. Handles take no lock of the Recorder's: Add and
// Set go straight to the OpenTelemetry instrument with a prepared attribute
// set.
type Recorder struct {
	meter metric.Meter

	mu       sync.Mutex
	counters map[*lb.MetricDesc]metric.Int64Counter
	gauges   map[*lb.MetricDesc]metric.Int64Gauge
	hists    map[*lb.MetricDesc]metric.Float64Histogram
}

var (
	_ lb.MetricsRecorder   = (*Recorder)(nil)
	_ lb.HistogramRecorder = (*Recorder)(nil)
)

// NewRecorder returns a recorder on a meter of mp named [ScopeName]. It
// creates every instrument of [lb.MetricDescs] at once, and fails if
// OpenTelemetry refuses one.
func NewRecorder(mp metric.MeterProvider) (*Recorder, error) {
	r := &Recorder{
		meter:    mp.Meter(ScopeName),
		counters: make(map[*lb.MetricDesc]metric.Int64Counter),
		gauges:   make(map[*lb.MetricDesc]metric.Int64Gauge),
		hists:    make(map[*lb.MetricDesc]metric.Float64Histogram),
	}
	for _, d := range lb.MetricDescs() {
		if err := r.create(d); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// create makes d's instrument. Called with r.mu held or before r is shared.
func (r *Recorder) create(d *lb.MetricDesc) error {
	var err error
	switch d.Kind {
	case lb.MetricGauge:
		r.gauges[d], err = r.meter.Int64Gauge(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description))
	case lb.MetricHistogram:
		r.hists[d], err = r.meter.Float64Histogram(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description))
	default:
		r.counters[d], err = r.meter.Int64Counter(d.Name, metric.WithUnit(d.Unit), metric.WithDescription(d.Description))
	}
	if err != nil {
		return fmt.Errorf("otel: creating instrument %s: %w", d.Name, err)
	}
	return nil
}

// attributes binds labelValues to d's labels. A missing value is "", an
// extra one is dropped.
func attributes(d *lb.MetricDesc, labelValues []string) attribute.Set {
	kvs := make([]attribute.KeyValue, len(d.Labels))
	for i, l := range d.Labels {
		v := ""
		if i < len(labelValues) {
			v = labelValues[i]
		}
		kvs[i] = attribute.String(l, v)
	}
	return attribute.NewSet(kvs...)
}

// histogram returns d's histogram, creating it as instrument does.
func (r *Recorder) histogram(d *lb.MetricDesc) metric.Float64Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.hists[d]
	if !ok && d.Kind == lb.MetricHistogram {
		if err := r.create(d); err != nil {
			otelapi.Handle(err)
		}
		h = r.hists[d]
	}
	return h
}

// Histogram returns the handle of histogram d for labelValues
// ([lb.HistogramRecorder]).
func (r *Recorder) Histogram(d *lb.MetricDesc, labelValues ...string) lb.Histogram {
	h := r.histogram(d)
	if h == nil {
		return lb.HistogramOf(lb.NopMetrics(), d)
	}
	return histogram{h: h, opts: []metric.RecordOption{metric.WithAttributeSet(attributes(d, labelValues))}}
}

type histogram struct {
	h    metric.Float64Histogram
	opts []metric.RecordOption
}

func (h histogram) Record(v float64) { h.h.Record(context.Background(), v, h.opts...) }

// instrument returns d's counter or gauge, creating it for a descriptor
// that is not one of lb.MetricDescs. An instrument OpenTelemetry refuses is
// reported to OpenTelemetry's error handler and replaced by a no-op one.
func (r *Recorder) instrument(d *lb.MetricDesc) (metric.Int64Counter, metric.Int64Gauge) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, okC := r.counters[d]
	g, okG := r.gauges[d]
	if !okC && !okG {
		if err := r.create(d); err != nil {
			otelapi.Handle(err) // OpenTelemetry's error handler, as its SDKs report
		}
		c, g = r.counters[d], r.gauges[d]
	}
	return c, g
}

// Counter returns the handle of counter d for labelValues.
func (r *Recorder) Counter(d *lb.MetricDesc, labelValues ...string) lb.Counter {
	c, _ := r.instrument(d)
	if c == nil {
		return lb.NopMetrics().Counter(d)
	}
	return counter{c: c, opts: []metric.AddOption{metric.WithAttributeSet(attributes(d, labelValues))}}
}

// Gauge returns the handle of gauge d for labelValues.
func (r *Recorder) Gauge(d *lb.MetricDesc, labelValues ...string) lb.Gauge {
	_, g := r.instrument(d)
	if g == nil {
		return lb.NopMetrics().Gauge(d)
	}
	return gauge{g: g, opts: []metric.RecordOption{metric.WithAttributeSet(attributes(d, labelValues))}}
}

type counter struct {
	c    metric.Int64Counter
	opts []metric.AddOption
}

func (h counter) Add(n int64) { h.c.Add(context.Background(), n, h.opts...) }

type gauge struct {
	g    metric.Int64Gauge
	opts []metric.RecordOption
}

func (h gauge) Set(v int64) { h.g.Record(context.Background(), v, h.opts...) }
