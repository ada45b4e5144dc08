package priority

import "github.com/lbkit/lbkit/lb"

// The metrics the policy records; docs/observability.md describes each.
var (
	// MetricSwitches counts the times priority changed the child
	// in use; the label names the new child.
	MetricSwitches = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.priority.switches", Unit: "{switch}",
		Description: "Number of times the priority policy changed the child in use.", Labels: []string{lb.LabelTarget, lb.LabelChild}})
	// MetricFailoverTimerFires counts priority failover timers that
	// fired; the label names the child that failed to connect in time.
	MetricFailoverTimerFires = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.priority.failover_timer_fires", Unit: "{timer}",
		Description: "Number of failover timers that fired.", Labels: []string{lb.LabelTarget, lb.LabelChild}})
)
