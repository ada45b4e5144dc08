package lb_test

import (
	"testing"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// docs/observability.md lists every metric with each of its labels.
func TestObservabilityDocListsEveryMetric(t *testing.T) {
	lbtest.WantDocumented(t, "../docs/observability.md", lb.MetricDescs())
}

// The no-op recorder's handles do nothing and allocate nothing.
func TestNopMetricsDoesNotAllocate(t *testing.T) {
	c := lb.NopMetrics().Counter(conn.MetricFailedPicks, "t", "dropped")
	g := lb.NopMetrics().Gauge(conn.MetricFailedPicks, "t", "dropped")
	if n := testing.AllocsPerRun(100, func() { c.Add(1); g.Set(2) }); n != 0 {
		t.Fatalf("%v allocations per Add+Set, want 0", n)
	}
}
