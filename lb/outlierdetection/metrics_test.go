package outlierdetection

import (
	"testing"
	"time"
)

// An ejection is counted at the sweep that ejects, and its end exactly when
// the ejection time is over.
func TestMetricsEjectionsAndUnejections(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m, target := e.h.Metrics, e.h.CC.Target()
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.calls("a", 10, 10)
	e.h.Advance(10*time.Second - 1)
	m.Want(t, 0, MetricEjections.Name, target)
	e.h.Advance(1)
	m.Want(t, 1, MetricEjections.Name, target)
	e.h.Advance(30*time.Second - 1)
	m.Want(t, 0, MetricUnejections.Name, target)
	e.h.Advance(1)
	m.Want(t, 1, MetricUnejections.Name, target)
	m.Want(t, 1, MetricEjections.Name, target)
}
