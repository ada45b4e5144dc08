package lb_test

import (
	"os"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// docs/observability.md lists every metric with each of its labels.
func TestObservabilityDocListsEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range lb.MetricDescs() {
		if seen[d.Name] {
			t.Errorf("metric %s listed twice", d.Name)
		}
		seen[d.Name] = true
		row := ""
		for _, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(line, "| `"+d.Name+"`") {
				row = line
			}
		}
		if row == "" {
			t.Errorf("docs/observability.md has no row for %s", d.Name)
			continue
		}
		for _, l := range append([]string{d.Unit, d.Kind.String()}, d.Labels...) {
			if !strings.Contains(row, l) {
				t.Errorf("docs/observability.md: the row of %s does not name %q", d.Name, l)
			}
		}
	}
}

// The no-op recorder's handles do nothing and allocate nothing.
func TestNopMetricsDoesNotAllocate(t *testing.T) {
	c := lb.NopMetrics().Counter(lb.MetricFailedPicks, "t", "dropped")
	g := lb.NopMetrics().Gauge(lb.MetricFailedPicks, "t", "dropped")
	if n := testing.AllocsPerRun(100, func() { c.Add(1); g.Set(2) }); n != 0 {
		t.Fatalf("%v allocations per Add+Set, want 0", n)
	}
}
