package lbtest

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// Metrics is an [lb.MetricsRecorder] that keeps every value in memory, for
// tests. The zero value is not usable: create it with [NewMetrics]. It is
// safe for concurrent use.
type Metrics struct {
	mu     sync.Mutex
	values map[string]*atomic.Int64 // by metricKey
	hists  map[string]*histValues   // by metricKey
}

// histValues is a histogram's recorded values.
type histValues struct {
	mu sync.Mutex
	v  []float64
}

// Record appends v.
func (h *histValues) Record(v float64) {
	h.mu.Lock()
	h.v = append(h.v, v)
	h.mu.Unlock()
}

// Histogram returns the histogram of desc for labelValues
// ([lb.HistogramRecorder]). It panics like Counter.
func (m *Metrics) Histogram(desc *lb.MetricDesc, labelValues ...string) lb.Histogram {
	m.handle(desc, labelValues) // checks the labels
	m.mu.Lock()
	defer m.mu.Unlock()
	k := metricKey(desc.Name, labelValues)
	if m.hists == nil {
		m.hists = make(map[string]*histValues)
	}
	h := m.hists[k]
	if h == nil {
		h = new(histValues)
		m.hists[k] = h
	}
	return h
}

// Recorded returns a copy of the values recorded by the histogram named
// name with labelValues, in order.
func (m *Metrics) Recorded(name string, labelValues ...string) []float64 {
	m.mu.Lock()
	h := m.hists[metricKey(name, labelValues)]
	m.mu.Unlock()
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]float64(nil), h.v...)
}

// NewMetrics returns an empty recorder.
func NewMetrics() *Metrics { return &Metrics{values: make(map[string]*atomic.Int64)} }

type metricValue struct{ v *atomic.Int64 }

func (m metricValue) Add(n int64) { m.v.Add(n) }
func (m metricValue) Set(v int64) { m.v.Store(v) }

func metricKey(name string, labelValues []string) string {
	return name + "{" + strings.Join(labelValues, ",") + "}"
}

func (m *Metrics) handle(desc *lb.MetricDesc, labelValues []string) metricValue {
	if len(labelValues) != len(desc.Labels) {
		panic("lbtest: metric " + desc.Name + ": label values do not match labels " + strings.Join(desc.Labels, ","))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := metricKey(desc.Name, labelValues)
	v := m.values[k]
	if v == nil {
		v = new(atomic.Int64)
		m.values[k] = v
	}
	return metricValue{v}
}

// Counter returns the counter of desc for labelValues. It panics if the
// number of label values is not the number of desc's labels.
func (m *Metrics) Counter(desc *lb.MetricDesc, labelValues ...string) lb.Counter {
	return m.handle(desc, labelValues)
}

// Gauge returns the gauge of desc for labelValues. It panics like Counter.
func (m *Metrics) Gauge(desc *lb.MetricDesc, labelValues ...string) lb.Gauge {
	return m.handle(desc, labelValues)
}

// Value returns the value recorded for the metric named name with
// labelValues, or 0 when there is none.
func (m *Metrics) Value(name string, labelValues ...string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v := m.values[metricKey(name, labelValues)]; v != nil {
		return v.Load()
	}
	return 0
}

// Want fails tb unless the metric named name with labelValues has the value
// want.
func (m *Metrics) Want(tb TB, want int64, name string, labelValues ...string) {
	tb.Helper()
	if got := m.Value(name, labelValues...); got != want {
		tb.Errorf("metric %s = %d, want %d", metricKey(name, labelValues), got, want)
	}
}

// WantDocumented fails tb unless the Markdown file at path has a table row
// for every metric of descs, starting "| `NAME`" and naming the metric's
// unit, kind and every label: a check that a metrics table stays
// complete.
func WantDocumented(tb TB, path string, descs []*lb.MetricDesc) {
	tb.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("reading the metrics table: %v", err)
	}
	seen := map[string]bool{}
	for _, d := range descs {
		if seen[d.Name] {
			tb.Errorf("metric %s listed twice", d.Name)
		}
		seen[d.Name] = true
		row := ""
		for _, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(line, "| `"+d.Name+"`") {
				row = line
			}
		}
		if row == "" {
			tb.Errorf("%s has no row for %s", path, d.Name)
			continue
		}
		for _, l := range append([]string{d.Unit, d.Kind.String()}, d.Labels...) {
			if !strings.Contains(row, l) {
				tb.Errorf("%s: the row of %s does not name %q", path, d.Name, l)
			}
		}
	}
}
