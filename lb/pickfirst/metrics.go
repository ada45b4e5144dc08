package pickfirst

import "github.com/lbkit/lbkit/lb"

// The metrics the policy records; docs/observability.md describes each.
var (
	// MetricConnectionAttemptsSucceeded counts pick_first's successful connection
	// attempts: each time it selects a SubConn that became READY.
	MetricConnectionAttemptsSucceeded = lb.RegisterMetric(&lb.MetricDesc{Name: "grpc.lb.pick_first.connection_attempts_succeeded", Unit: "{attempt}",
		Description: "Number of successful connection attempts.", Labels: []string{lb.LabelTarget}})
	// MetricConnectionAttemptsFailed counts pick_first's failed connection attempts:
	// each TRANSIENT_FAILURE of one of its SubConns.
	MetricConnectionAttemptsFailed = lb.RegisterMetric(&lb.MetricDesc{Name: "grpc.lb.pick_first.connection_attempts_failed", Unit: "{attempt}",
		Description: "Number of failed connection attempts.", Labels: []string{lb.LabelTarget}})
	// MetricDisconnections counts the times pick_first's selected
	// SubConn left READY.
	MetricDisconnections = lb.RegisterMetric(&lb.MetricDesc{Name: "grpc.lb.pick_first.disconnections", Unit: "{disconnection}",
		Description: "Number of times the selected subchannel becomes disconnected.", Labels: []string{lb.LabelTarget}})
)
