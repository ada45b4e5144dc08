package wrr_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/wrr"
)

// report sends r through the Done of a pick of sc on the last picker,
// picking until the schedule gives sc.
func (e *env) report(sc *lbtest.SubConn, r lb.LoadReport) {
	e.t.Helper()
	p := e.h.State().Picker
	for range 1000 {
		res, err := p.Pick(lb.PickInfo{Ctx: context.Background()})
		if err != nil {
			e.t.Fatalf("pick: %v", err)
		}
		if res.SubConn == sc {
			if res.Done == nil {
				e.t.Fatalf("pick of %v has no Done", sc)
			}
			res.Done(lb.DoneInfo{Load: &r})
			return
		}
		if res.Done != nil {
			res.Done(lb.DoneInfo{})
		}
	}
	e.t.Fatalf("1000 picks without %v", sc)
}

// loaded is a report of qps requests per second at utilization util: an
// A58 weight of qps/util.
func loaded(qps, util float64) lb.LoadReport {
	return lb.LoadReport{QPS: qps, CPUUtilization: util}
}

// reportFor makes the endpoints report every second for d (a at weight
// 200, b at 400, c nothing), advancing the clock.
func (e *env) reportFor(d time.Duration, scs []*lbtest.SubConn) {
	e.t.Helper()
	for end := e.h.Clock.Now().Add(d); e.h.Clock.Now().Before(end); {
		e.report(scs[0], loaded(100, 0.5))
		e.report(scs[1], lb.LoadReport{QPS: 100, CPUUtilization: 0.9, ApplicationUtilization: 0.25})
		e.h.Settle()
		e.h.Advance(time.Second)
	}
}

// gRFC A58: weights from load reports are used once every endpoint with
// reports has reported for blackoutPeriod, the others getting their mean;
// with fewer than two usable weights (before that, and after the reports
// expire) the schedule uses the configured weights (here none: round
// robin).
func TestLoadReportsWeighEndpoints(t *testing.T) {
	e := newEnv(t, wrr.Config{})
	scs := e.readyAll(eps(noWeight, noWeight, noWeight)...)
	e.wantCounts(300, map[int]int{0: 100, 1: 100, 2: 100})

	e.reportFor(9*time.Second, scs) // the first reports start the blackout
	e.wantCounts(300, map[int]int{0: 100, 1: 100, 2: 100})
	m, target := e.h.Metrics, e.h.CC.Target()
	notYet := m.Value(wrr.MetricEndpointWeightNotYetUsable.Name, target, "")
	e.reportFor(2*time.Second, scs) // the blackout (10 s) has ended
	// a: 200, b: 400 (application utilization wins), c: the mean, 300.
	e.wantCounts(900, map[int]int{0: 200, 1: 400, 2: 300})
	// One scheduler update (the weights changed once): c has no weight
	// (A78), and each endpoint's weight is recorded, 0 for c.
	m.Want(t, notYet+1, wrr.MetricEndpointWeightNotYetUsable.Name, target, "")
	if w := m.Recorded(wrr.MetricEndpointWeights.Name, target, ""); len(w) < 3 || !slices.Equal(w[len(w)-3:], []float64{200, 400, 0}) {
		t.Errorf("endpoint weights recorded %v, want them to end with 200, 400, 0", w)
	}

	// No more reports: the weights stay until they expire (3 min).
	e.h.Advance(wrr.DefaultWeightExpirationPeriod - 3*time.Second)
	e.wantCounts(900, map[int]int{0: 200, 1: 400, 2: 300})
	e.h.Advance(3 * time.Second)
	e.wantCounts(300, map[int]int{0: 100, 1: 100, 2: 100})
	// The timer stopped with the last fresh report.
	if _, pending := e.h.Serializer.NextDeadline(); pending {
		t.Errorf("a timer is pending after every weight expired")
	}
	if m.Value(wrr.MetricEndpointWeightStale.Name, target, "") == 0 {
		t.Errorf("no stale endpoint counted after the weights expired")
	}

	// Fresh reports serve a new blackout.
	e.reportFor(9*time.Second, scs)
	e.wantCounts(300, map[int]int{0: 100, 1: 100, 2: 100})
	e.reportFor(2*time.Second, scs)
	e.wantCounts(900, map[int]int{0: 200, 1: 400, 2: 300})
}

// Without reports, and with a single endpoint reporting, the configured
// weights are used.
func TestConfiguredWeightsWithoutEnoughReports(t *testing.T) {
	e := newEnv(t, wrr.Config{LoadReports: wrr.LoadReportConfig{BlackoutPeriod: wrr.NoBlackout}})
	scs := e.readyAll(eps(1, 2, 3)...)
	for range 3 {
		e.report(scs[0], loaded(100, 0.01))
		e.h.Settle()
		e.h.Advance(time.Second)
	}
	e.wantCounts(600, map[int]int{0: 100, 1: 200, 2: 300})
}

// A SubConn that becomes READY again serves a new blackout before its
// reported weight is used again (A58's OnSubchannelBecomesReady).
func TestReadyAgainRestartsBlackout(t *testing.T) {
	e := newEnv(t, wrr.Config{LoadReports: wrr.LoadReportConfig{BlackoutPeriod: 5 * time.Second}})
	scs := e.readyAll(eps(noWeight, noWeight)...)
	for range 6 {
		e.report(scs[0], loaded(100, 0.5)) // 200
		e.report(scs[1], loaded(100, 1))   // 100
		e.h.Settle()
		e.h.Advance(time.Second)
	}
	e.wantCounts(300, map[int]int{0: 200, 1: 100})
	scs[0].Idle()
	scs[0].Connecting()
	scs[0].Ready()
	e.h.Advance(time.Second)
	// a is in a new blackout: fewer than two usable weights.
	e.wantCounts(300, map[int]int{0: 150, 1: 150})
}

// The penalty lowers the weight of an endpoint that fails: qps / (util +
// eps/qps * penalty).
func TestErrorUtilizationPenalty(t *testing.T) {
	e := newEnv(t, wrr.Config{LoadReports: wrr.LoadReportConfig{BlackoutPeriod: wrr.NoBlackout, ErrorUtilizationPenalty: 2}})
	scs := e.readyAll(eps(noWeight, noWeight)...)
	e.report(scs[0], lb.LoadReport{QPS: 100, CPUUtilization: 0.5, EPS: 25}) // 100 / (0.5 + 0.25*2) = 100
	e.report(scs[1], loaded(100, 0.5))                                      // 200
	e.h.Settle()
	e.h.Advance(time.Second)
	e.wantCounts(300, map[int]int{0: 100, 1: 200})
}

// Reports without positive qps and utilization, and picks without a
// report, change nothing and start no timer.
func TestUnusableReportsAreIgnored(t *testing.T) {
	e := newEnv(t, wrr.Config{})
	scs := e.readyAll(eps(noWeight, noWeight)...)
	e.report(scs[0], loaded(0, 0.5))
	e.report(scs[1], loaded(100, 0))
	e.h.Settle()
	if _, pending := e.h.Serializer.NextDeadline(); pending {
		t.Errorf("a timer is pending after reports without weight")
	}
}

// enableOobLoadReport: true is refused, naming what lbkit lacks.
func TestOutOfBandReportingRefused(t *testing.T) {
	_, _, err := wrr.Builder{}.ParseConfig([]byte(`{"enableOobLoadReport": true}`))
	if err == nil || !strings.Contains(err.Error(), "lbkit does not implement") {
		t.Fatalf("ParseConfig = %v, want an error saying lbkit does not implement out-of-band reports", err)
	}
}
