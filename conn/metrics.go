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
}

func newChannelMetrics(r lb.MetricsRecorder, target string) channelMetrics {
	var m channelMetrics
	for s := range m.stateChanges {
		m.stateChanges[s] = r.Counter(lb.MetricSubConnStateChanges, target, lb.ConnectivityState(s).String())
	}
	m.healthPassing = r.Counter(lb.MetricHealthTransitions, target, "passing")
	m.healthFailing = r.Counter(lb.MetricHealthTransitions, target, "failing")
	m.pickTransientFailure = r.Counter(lb.MetricFailedPicks, target, "transient_failure")
	m.pickDropped = r.Counter(lb.MetricFailedPicks, target, "dropped")
	m.pickDeadline = r.Counter(lb.MetricFailedPicks, target, "deadline")
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
