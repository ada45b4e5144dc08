package wrr_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/wrr"
)

// The model's periods: short, so that random steps cross them.
const (
	modelBlackout   = 2 * time.Second
	modelExpiration = 5 * time.Second
	modelUpdate     = time.Second
)

// modelEndpoint is gRFC A58's weight record, written from the spec's
// pseudo-code: times are offsets from the start, and sinceInf stands for
// non_empty_since = infinity.
type modelEndpoint struct {
	cfg         uint32 // configured weight
	has         bool   // a usable report arrived once
	weight      float64
	lastUpdated time.Duration
	since       time.Duration
	sinceInf    bool
}

// get is A58's GetWeight, side effect included.
func (e *modelEndpoint) get(now time.Duration) float64 {
	if !e.has {
		return 0
	}
	if now-e.lastUpdated >= modelExpiration {
		e.sinceInf = true
		return 0
	}
	if e.sinceInf || now-e.since < modelBlackout {
		return 0
	}
	return e.weight
}

// weightModel is the policy's weight state machine as the spec describes
// it: reports update an endpoint's record; every weightUpdatePeriod, from
// the first report while none was fresh, and on every READY change, the
// schedule takes each endpoint's weight (the mean for those without one),
// or the configured weights when fewer than two have one.
type weightModel struct {
	eps       []modelEndpoint
	now       time.Duration
	armed     bool
	nextTick  time.Duration
	published []float64 // the shares of the published schedule
}

// schedule computes the shares of a schedule built at m.now.
func (m *weightModel) schedule() []float64 {
	ws := make([]float64, len(m.eps))
	var sum float64
	usable := 0
	for i := range m.eps {
		ws[i] = m.eps[i].get(m.now)
		if ws[i] > 0 {
			usable++
			sum += ws[i]
		}
	}
	if usable < 2 {
		for i := range m.eps {
			ws[i] = float64(m.eps[i].cfg)
		}
	} else {
		for i := range ws {
			if ws[i] == 0 {
				ws[i] = sum / float64(usable)
			}
		}
	}
	total := 0.0
	for _, w := range ws {
		total += w
	}
	for i := range ws {
		ws[i] /= total
	}
	return ws
}

// fresh reports whether any endpoint reported less than the expiration
// period ago.
func (m *weightModel) fresh(at time.Duration) bool {
	return slices.ContainsFunc(m.eps, func(e modelEndpoint) bool { return e.has && at-e.lastUpdated < modelExpiration })
}

// advance moves the model's time by d, running the weight update ticks.
func (m *weightModel) advance(d time.Duration) {
	end := m.now + d
	for m.armed && m.nextTick <= end {
		m.now = m.nextTick
		m.published = m.schedule()
		m.nextTick += modelUpdate
		m.armed = m.fresh(m.now)
	}
	m.now = end
}

// report records a report of weight w (0: unusable) from endpoint i.
func (m *weightModel) report(i int, w float64) {
	if w == 0 {
		return
	}
	e := &m.eps[i]
	if !e.has || e.sinceInf {
		e.since, e.sinceInf = m.now, false
	}
	e.has, e.weight, e.lastUpdated = true, w, m.now
	if !m.armed {
		m.armed, m.nextTick = true, m.now+modelUpdate
	}
}

// readyAgain is endpoint i's SubConn becoming READY again.
func (m *weightModel) readyAgain(i int) {
	m.eps[i].sinceInf = true
	m.published = m.schedule()
}

// The weight state machine (blackout, expiry, not yet usable, the mean for
// endpoints without a weight, the fallback to configured weights) against
// the model above, with random reports, clock steps and reconnections:
// after every step, the published picker's shares are the model's.
func TestLoadWeightsModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := wrr.Config{LoadReports: wrr.LoadReportConfig{BlackoutPeriod: modelBlackout,
			WeightExpirationPeriod: modelExpiration, WeightUpdatePeriod: modelUpdate}}
		e := newEnv(rt, cfg)
		n := rapid.IntRange(2, 4).Draw(rt, "endpoints")
		cfgW := make([]int, n)
		m := &weightModel{eps: make([]modelEndpoint, n)}
		for i := range cfgW {
			cfgW[i] = rapid.IntRange(1, 3).Draw(rt, "configured")
			m.eps[i].cfg = uint32(cfgW[i])
		}
		scs := e.readyAll(eps(cfgW...)...)
		m.published = m.schedule()
		rt.Repeat(map[string]func(*rapid.T){
			"report": func(rt *rapid.T) {
				i := rapid.IntRange(0, n-1).Draw(rt, "endpoint")
				w := rapid.SampledFrom([]float64{0, 50, 100, 200, 400}).Draw(rt, "weight")
				r := lb.LoadReport{QPS: w, CPUUtilization: 1}
				if w == 0 {
					r.QPS = 100
					r.CPUUtilization = 0
				}
				e.report(scs[i], r)
				e.h.Settle()
				m.report(i, w)
			},
			"advance": func(rt *rapid.T) {
				d := time.Duration(rapid.IntRange(0, 12).Draw(rt, "quarter-seconds")) * 250 * time.Millisecond
				e.h.Advance(d)
				m.advance(d)
			},
			"readyAgain": func(rt *rapid.T) {
				i := rapid.IntRange(0, n-1).Draw(rt, "endpoint")
				scs[i].Idle()
				scs[i].Connecting()
				scs[i].Ready()
				e.h.Settle()
				m.readyAgain(i)
			},
			"": func(rt *rapid.T) { checkShares(rt, e, scs, m.published) },
		})
	})
}

// checkShares makes picks on the published picker and checks each
// endpoint's count against its share, within EDF's deviation bound (n
// picks) and the rounding of weights to integers.
func checkShares(t *rapid.T, e *env, scs []*lbtest.SubConn, shares []float64) {
	const picks = 4000
	got := countPicks(t, e.h.State().Picker, picks)
	for i, sc := range scs {
		want := shares[i] * picks
		if math.Abs(float64(got[sc])-want) > float64(len(scs))+1 {
			t.Fatalf("endpoint %d: %d of %d picks, want %.1f (shares %v)", i, got[sc], picks, want, shares)
		}
	}
}
