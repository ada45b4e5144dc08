package peakewma

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// modelEndpoint is the model's view of one endpoint, written from the
// reference behaviour (Finagle's PeakEwma, tower's peak_ewma, as the
// package documentation states it).
type modelEndpoint struct {
	sc        lb.SubConn
	est       float64 // ns, as stored: rounded to float32
	at        int64   // tick of the last update
	pending   int64
	busySince int64 // ns
}

// modelRequest is a picked request not yet done.
type modelRequest struct {
	e      *modelEndpoint
	picked int64 // ns
	done   func(lb.DoneInfo)
}

// peakMachine drives one peak_ewma_experimental balancer with random
// updates, SubConn state changes, picks, completions (succeeded, failed,
// not sent) and clock moves, against the model:
//
//   - a new endpoint starts from the median of the last update's
//     endpoints' decayed estimates (mean of the middle two), DefaultRTT
//     when there were none;
//   - an estimate decays as est·exp(-Δ/τ);
//   - a sample r (plus the penalty if failed) at Δ after the last update:
//     r if r > est·w, else est·w + r·(1-w), w = exp(-Δ/τ);
//   - a not-sent completion counts down only;
//   - a pick samples two distinct READY endpoints (the indices are the
//     picker's) and takes the one of lower cost: max(decayed estimate,
//     stall) × (in flight + 1); fewer in flight among equals, then the
//     first sampled. The stall, while requests are in flight, is the time
//     since the latest of the last completion, the last pick that found
//     the endpoint idle and the last not-sent completion, each known to
//     the end of its tick of 2^20 ns.
//
// After every step, each endpoint's cost is the model's, and its stall is
// at most the age of its oldest request in flight (the bound's claim).
type peakMachine struct {
	h     *lbtest.Harness
	cfg   Config
	model *lbtest.EndpointModel
	start time.Time
	eps   map[int]*modelEndpoint
	open  []modelRequest
}

func newPeakMachine(t *rapid.T) *peakMachine {
	m := &peakMachine{
		cfg: Config{
			DecayTime:      time.Duration(rapid.IntRange(100, 20000).Draw(t, "decayMs")) * time.Millisecond,
			DefaultRTT:     time.Duration(rapid.IntRange(1, 500).Draw(t, "defaultRttTicks")) * tickDur,
			FailurePenalty: time.Duration(rapid.IntRange(1, 2000).Draw(t, "penaltyTicks")) * tickDur,
		},
		h:   lbtest.New(t, lbtest.WithSeed(rapid.Uint64().Draw(t, "seed"))),
		eps: map[int]*modelEndpoint{},
	}
	m.start = m.h.Clock.Now()
	m.h.Build(Builder{})
	m.model = lbtest.NewEndpointModel(m.h, lbtest.Pool(5)...)
	return m
}

func (m *peakMachine) now() int64     { return int64(m.h.Clock.Now().Sub(m.start)) }
func (m *peakMachine) nowTick() int64 { return m.now() >> tickBits }
func (m *peakMachine) weight(at int64) float64 {
	return math.Exp(-float64((m.nowTick()-at)<<tickBits) / float64(m.cfg.DecayTime))
}
func (m *peakMachine) decayed(e *modelEndpoint) float64 { return e.est * m.weight(e.at) }

func (m *peakMachine) update(t *rapid.T) {
	var decayed []float64
	for _, i := range m.model.Listed() {
		decayed = append(decayed, m.decayed(m.eps[i]))
	}
	slices.Sort(decayed)
	startAt := float64(m.cfg.DefaultRTT)
	if n := len(decayed); n%2 == 1 {
		startAt = decayed[n/2]
	} else if n > 0 {
		startAt = (decayed[n/2-1] + decayed[n/2]) / 2
	}
	m.model.DrawUpdate(t, m.cfg)
	for _, i := range m.model.Listed() {
		sc := m.model.SubConn(i)
		if e := m.eps[i]; e == nil || e.sc != sc {
			m.eps[i] = &modelEndpoint{sc: sc, est: float64(float32(startAt)), at: m.nowTick()}
		}
	}
}

func (m *peakMachine) report(t *rapid.T) { m.model.DrawReport(t) }

func (m *peakMachine) wait(t *rapid.T) {
	m.h.Advance(time.Duration(rapid.IntRange(1, 20000).Draw(t, "ticks")) * tickDur)
}

// stall is the model's stall of endpoint e now (read while requests are
// in flight).
func (m *peakMachine) stall(e *modelEndpoint) float64 {
	return float64(m.now() - (max(e.busySince>>tickBits, e.at)+1)<<tickBits)
}

// cost is the model's cost of endpoint e now.
func (m *peakMachine) cost(e *modelEndpoint) float64 {
	est := m.decayed(e)
	if e.pending > 0 {
		est = max(est, m.stall(e))
	}
	return est * float64(e.pending+1)
}

func (m *peakMachine) pick(t *rapid.T) {
	ready := m.model.Ready()
	st := m.h.State()
	if len(ready) == 0 {
		t.Skip("not READY")
	}
	p, ok := st.Picker.(*picker)
	if !ok || st.ConnectivityState != lb.Ready || len(p.entries) != len(ready) {
		t.Fatalf("state %v with picker %T, want READY with the policy's picker over %d", st.ConnectivityState, st.Picker, len(ready))
	}
	byConn := map[lb.SubConn]int{}
	for _, i := range m.model.Listed() {
		byConn[m.eps[i].sc] = i
	}
	a, b := p.sample(p.next.Load() + weyl)
	if len(ready) > 1 && a == b {
		t.Fatalf("sampled %d twice among %d", a, len(ready))
	}
	ea, eb := m.eps[byConn[ready[a]]], m.eps[byConn[ready[b]]]
	want, check := ea, true
	if ca, cb := m.cost(ea), m.cost(eb); cb < ca || (cb == ca && eb.pending < ea.pending) {
		want = eb
		check = ca-cb > 1e-6*ca
	} else {
		check = ca == cb || cb-ca > 1e-6*cb
	}
	r, err := p.Pick(lb.PickInfo{})
	if err != nil || r.Done == nil {
		t.Fatalf("Pick = %v, %v", r.SubConn, err)
	}
	if check && r.SubConn != want.sc {
		t.Fatalf("Pick = %v, want %v (costs %v and %v)", r.SubConn, want.sc, m.cost(ea), m.cost(eb))
	}
	i := byConn[r.SubConn]
	e := m.eps[i]
	if e.pending == 0 {
		e.busySince = m.now()
	}
	e.pending++
	m.open = append(m.open, modelRequest{e: e, picked: m.now(), done: r.Done})
}

func (m *peakMachine) finish(t *rapid.T) {
	if len(m.open) == 0 {
		t.Skip("no request in flight")
	}
	k := rapid.IntRange(0, len(m.open)-1).Draw(t, "request")
	req := m.open[k]
	m.open = slices.Delete(m.open, k, k+1)
	m.h.Advance(time.Duration(rapid.IntRange(0, 3000).Draw(t, "rttTicks")) * tickDur)
	e := req.e
	e.pending--
	outcome := rapid.IntRange(0, 2).Draw(t, "outcome")
	if outcome == 2 {
		req.done(lb.DoneInfo{Err: fmt.Errorf("discarded: %w", lb.ErrRequestNotSent)})
		e.busySince = m.now()
		return
	}
	r := float64(m.now() - req.picked)
	var err error
	if outcome == 1 {
		err = errors.New("failed")
		r += float64(m.cfg.FailurePenalty)
	}
	req.done(lb.DoneInfo{Err: err})
	w := m.weight(e.at)
	if d := e.est * w; r > d {
		e.est = r
	} else {
		e.est = d + r*(1-w)
	}
	e.est = float64(float32(e.est))
	e.at = m.nowTick()
}

// check: every live endpoint's estimate, update tick, requests in flight
// and cost are the model's, and its stall is at most the age of its oldest
// request in flight.
func (m *peakMachine) check(t *rapid.T) {
	m.h.Do(func() {
		b := m.h.Balancer.(*balancer)
		for _, ep := range b.Endpoints() {
			var e *modelEndpoint
			for _, me := range m.eps {
				if me.sc == ep.SubConn {
					e = me
				}
			}
			est, at := estimateOf(ep.Data.state.Load())
			if e == nil || ep.Data.pending() != e.pending || at != uint32(e.at) ||
				math.Abs(est-e.est) > 1e-5*math.Max(est, e.est) {
				t.Fatalf("%v: estimate %v at tick %d, %d in flight; model %+v", ep.SubConn, est, at, ep.Data.pending(), e)
			}
			got, _ := ep.Data.cost(b.meter.now(), b.meter.decay.Load())
			if want := m.cost(e); math.Abs(got-want) > 1e-5*math.Max(got, want) {
				t.Fatalf("%v: cost %v, model %v (%+v)", ep.SubConn, got, want, e)
			}
			if stall, oldest := m.stall(e), m.oldest(e); e.pending > 0 && stall > float64(m.now()-oldest) {
				t.Fatalf("%v: stall %v, but the oldest request in flight is %v old", ep.SubConn, time.Duration(stall), time.Duration(m.now()-oldest))
			}
		}
	})
}

// oldest returns the pick time of e's oldest request in flight.
func (m *peakMachine) oldest(e *modelEndpoint) int64 {
	oldest := int64(math.MaxInt64)
	for _, r := range m.open {
		if r.e == e {
			oldest = min(oldest, r.picked)
		}
	}
	return oldest
}

// TestPropertyFollowsTheReference runs the model.
func TestPropertyFollowsTheReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPeakMachine(t)
		m.update(t)
		t.Repeat(map[string]func(*rapid.T){
			"update": m.update,
			"report": m.report,
			"pick":   m.pick,
			"finish": m.finish,
			"wait":   m.wait,
			"":       m.check,
		})
	})
}
