package priority

import (
	"testing"
	"time"
)

// The failover timer's firing and each change of the child in use are
// counted once, labelled with the child, exactly at the timeout.
func TestMetricsSwitchesAndFailoverFires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m, target := e.h.Metrics, e.h.CC.Target()
	twoLeaves(e)
	m.Want(t, 1, MetricSwitches.Name, target, "p0")

	e.h.Advance(failover - time.Nanosecond)
	m.Want(t, 0, MetricFailoverTimerFires.Name, target, "p0")
	e.h.Advance(time.Nanosecond)
	m.Want(t, 1, MetricFailoverTimerFires.Name, target, "p0")
	m.Want(t, 1, MetricSwitches.Name, target, "p1")

	e.h.SubConnFor("10.0.0.1:80").Ready()
	m.Want(t, 2, MetricSwitches.Name, target, "p0")
	m.Want(t, 0, MetricFailoverTimerFires.Name, target, "p1")
}
