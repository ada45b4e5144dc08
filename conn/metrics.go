package conn

import (
	"github.com/lbkit/lbkit/lb"
)

// channelMetrics holds the channel's metric handles, resolved by New so
// that recording never allocates or locks.
type channelMetrics struct {
	stateChanges                                    [lb.Shutdown + 1]lb.Counter // by new state
	healthPassing, healthFailing                    lb.Counter
	pickTransientFailure, pickDropped, pickDeadline lb.Counter
	malformedLoadReports                            lb.Counter
}

func newChannelMetrics(r lb.MetricsRecorder, target string) channelMetrics {
	var m channelMetrics
	for s := range m.stateChanges {
		m.stateChanges[s] = r.Counter(MetricSubConnStateChanges, target, lb.ConnectivityState(s).String())
	}
	m.healthPassing = r.Counter(MetricHealthTransitions, target, "passing")
	m.healthFailing = r.Counter(MetricHealthTransitions, target, "failing")
	m.pickTransientFailure = r.Counter(MetricFailedPicks, target, "transient_failure")
	m.pickDropped = r.Counter(MetricFailedPicks, target, "dropped")
	m.pickDeadline = r.Counter(MetricFailedPicks, target, "deadline")
	m.malformedLoadReports = r.Counter(MetricMalformedLoadReports, target)
	return m
}

// stateChanged counts a connection's change to s.
func (m *channelMetrics) stateChanged(s lb.ConnectivityState) {
	if s >= 0 && s <= lb.Shutdown {
		m.stateChanges[s].Add(1)
	}
}

// pickFailed counts a pick the policy failed with err (a drop or a
// transient failure), and returns err.
func (m *channelMetrics) pickFailed(err error) error {
	if lb.ClassifyPickError(err) == lb.PickFail {
		m.pickDropped.Add(1)
	} else {
		m.pickTransientFailure.Add(1)
	}
	return err
}

// The metrics the channel records; docs/observability.md describes each.
var (
	// MetricHealthTransitions counts health verdict changes of connections,
	// by the new verdict.
	MetricHealthTransitions = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.health.transitions", Unit: "{transition}",
		Description: "Number of health verdict changes of connections.", Labels: []string{lb.LabelTarget, lb.LabelHealth}})
	// MetricSubConnStateChanges counts connection state changes, by the new
	// state.
	MetricSubConnStateChanges = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.subconn.state_changes", Unit: "{change}",
		Description: "Number of connectivity state changes of connections.", Labels: []string{lb.LabelTarget, lb.LabelState}})
	// MetricFailedPicks counts requests that [Channel.Pick] failed, by
	// reason.
	MetricFailedPicks = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.channel.failed_picks", Unit: "{pick}",
		Description: "Number of picks that failed.", Labels: []string{lb.LabelTarget, lb.LabelReason}})
	// MetricMalformedLoadReports counts backend load reports a transport
	// dropped because they did not parse or held invalid values
	// ([Channel.CountMalformedLoadReport]).
	MetricMalformedLoadReports = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.load_reports.malformed", Unit: "{report}",
		Description: "Number of backend load reports ignored because they were malformed.", Labels: []string{lb.LabelTarget}})
)

// CountMalformedLoadReport counts one backend load report that a transport
// over c ignored because it was malformed (see [lb.LoadReport]), in
// [MetricMalformedLoadReports]. Safe for concurrent use; it neither blocks
// nor allocates.
func (c *Channel) CountMalformedLoadReport() { c.metrics.malformedLoadReports.Add(1) }
