package priority

import (
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// The failover timer's firing and each change of the child in use are
// counted once, labelled with the child, exactly at the timeout.
func TestMetricsSwitchesAndFailoverFires(t *testing.T) {
	e := newEnv(t)
	m, target := e.h.Metrics, e.h.CC.Target()
	twoLeaves(e)
	m.Want(t, 1, lb.MetricPrioritySwitches.Name, target, "p0")

	e.h.Advance(failover - time.Nanosecond)
	m.Want(t, 0, lb.MetricPriorityFailoverFired.Name, target, "p0")
	e.h.Advance(time.Nanosecond)
	m.Want(t, 1, lb.MetricPriorityFailoverFired.Name, target, "p0")
	m.Want(t, 1, lb.MetricPrioritySwitches.Name, target, "p1")

	e.h.SubConnFor("10.0.0.1:80").Ready()
	m.Want(t, 2, lb.MetricPrioritySwitches.Name, target, "p0")
	m.Want(t, 0, lb.MetricPriorityFailoverFired.Name, target, "p1")
}
