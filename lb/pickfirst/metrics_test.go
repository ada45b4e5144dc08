package pickfirst_test

import (
	"errors"
	"testing"

	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/pickfirst"
)

// gRFC A78's pick_first metrics: a failed attempt, a successful one, and a
// disconnection of the selected SubConn, each counted once.
func TestMetricsConnectionAttemptsAndDisconnections(t *testing.T) {
	e := newEnv(t, lbtest.WithTarget("pf:///x"))
	m := e.h.Metrics
	e.mustUpdate("a", "b")
	e.h.SubConn(0).Connecting()
	e.h.SubConn(0).Fail(errors.New("a refused"))
	m.Want(t, 1, pickfirst.MetricConnectionAttemptsFailed.Name, "pf:///x")
	m.Want(t, 0, pickfirst.MetricConnectionAttemptsSucceeded.Name, "pf:///x")

	e.h.SubConn(1).Connecting()
	e.h.SubConn(1).Ready()
	m.Want(t, 1, pickfirst.MetricConnectionAttemptsSucceeded.Name, "pf:///x")
	m.Want(t, 0, pickfirst.MetricDisconnections.Name, "pf:///x")

	e.h.Advance(backoff) // time passes; nothing is counted for it
	e.h.SubConn(1).Idle()
	m.Want(t, 1, pickfirst.MetricDisconnections.Name, "pf:///x")
	m.Want(t, 1, pickfirst.MetricConnectionAttemptsFailed.Name, "pf:///x")
}
