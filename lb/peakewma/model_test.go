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
	sc      lb.SubConn
	est     float64 // ns, as stored: rounded to float32
	at      int64   // tick of the last update
	pending int64
	// emptied is when the last release that left no measured request in
	// flight happened (ns).
	emptied int64
}

// modelRequest is a picked request not yet done.
type modelRequest struct {
	e      *modelEndpoint
	picked int64 // ns
	done   func(lb.DoneInfo)
	// measured: the request holds one of the endpoint's slots; first:
	// it found the endpoint with no slot held (it holds slot 0).
	measured, first bool
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
//   - a not-sent completion, or one of a request that is not measured,
//     counts down only;
//   - a pick samples two distinct READY endpoints (the indices are the
//     picker's) and takes the one of lower cost: max(decayed estimate,
//     stall) × (in flight + 1); fewer in flight among equals, then the
//     first sampled;
//   - an endpoint measures the request that finds no measured request in
//     flight and up to 63 more beside it; the others are counted only;
//   - the stall, while requests are in flight, is the age of the oldest
//     measured request in flight, or while none is measured the time
//     since the release that left none measured, from the end of its tick
//     of 2^20 ns.
//
// After every step, each endpoint's cost and stall are the model's, and
// its stall is at most the age of its oldest request in flight (the
// bound's claim). Bursts of picks drive endpoints beyond their slots, and
// runs of completions of measured requests leave the unmeasured ones
// last.
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
func (m *peakMachine) stall(e *modelEndpoint) int64 {
	since, _ := m.oldest(e, true)
	if since == math.MaxInt64 {
		since = e.emptied
	}
	return m.now() - (since>>tickBits+1)<<tickBits
}

// cost is the model's cost of endpoint e now.
func (m *peakMachine) cost(e *modelEndpoint) float64 {
	est := m.decayed(e)
	if e.pending > 0 {
		est = max(est, float64(m.stall(e)))
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
	req := modelRequest{e: e, picked: m.now(), done: r.Done}
	if _, n := m.oldest(e, true); n == 0 {
		req.measured, req.first = true, true
	} else {
		beside := n
		for _, r := range m.open {
			if r.e == e && r.first {
				beside--
			}
		}
		req.measured = beside < slotCount-1
	}
	e.pending++
	m.open = append(m.open, req)
}

// burst picks 1 to 80 times in a row.
func (m *peakMachine) burst(t *rapid.T) {
	for range rapid.IntRange(1, 80).Draw(t, "picks") {
		m.pick(t)
	}
}

func (m *peakMachine) finish(t *rapid.T) { m.complete(t, false) }

// drain completes 1 to 80 measured requests in a row, so that requests
// beyond the slots outlive every measured one.
func (m *peakMachine) drain(t *rapid.T) {
	for range rapid.IntRange(1, 80).Draw(t, "completions") {
		m.complete(t, true)
	}
}

// complete completes a request in flight, a measured one if measured.
func (m *peakMachine) complete(t *rapid.T, measured bool) {
	var ks []int
	for k, r := range m.open {
		if r.measured || !measured {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		t.Skip("no request in flight")
	}
	k := ks[rapid.IntRange(0, len(ks)-1).Draw(t, "request")]
	req := m.open[k]
	m.open = slices.Delete(m.open, k, k+1)
	m.h.Advance(time.Duration(rapid.IntRange(0, 3000).Draw(t, "rttTicks")) * tickDur)
	e := req.e
	e.pending--
	if _, n := m.oldest(e, true); req.measured && n == 0 {
		e.emptied = m.now()
	}
	outcome := rapid.IntRange(0, 2).Draw(t, "outcome")
	if outcome == 2 {
		req.done(lb.DoneInfo{Err: fmt.Errorf("discarded: %w", lb.ErrRequestNotSent)})
		return
	}
	r := float64(m.now() - req.picked)
	var err error
	if outcome == 1 {
		err = errors.New("failed")
		r += float64(m.cfg.FailurePenalty)
	}
	req.done(lb.DoneInfo{Err: err})
	if !req.measured {
		return
	}
	w := m.weight(e.at)
	if d := e.est * w; r > d {
		e.est = r
	} else {
		e.est = d + r*(1-w)
	}
	e.est = float64(float32(e.est))
	e.at = m.nowTick()
}

// check: every live endpoint's estimate, update tick, requests in flight,
// cost and stall are the model's, and its stall is at most the age of its
// oldest request in flight.
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
			if e.pending == 0 {
				continue
			}
			if got, want := ep.Data.stall(b.meter.now()), m.stall(e); got != want {
				t.Fatalf("%v: stall %v, model %v (%+v)", ep.SubConn, time.Duration(got), time.Duration(want), e)
			}
			if stall, oldest := m.stall(e), m.now()-m.oldestAny(e); stall > oldest {
				t.Fatalf("%v: stall %v, but the oldest request in flight is %v old", ep.SubConn, time.Duration(stall), time.Duration(oldest))
			}
		}
	})
}

// oldest returns the pick time of e's oldest request in flight, measured
// or any, and how many such requests there are (MaxInt64 and 0 for none).
func (m *peakMachine) oldest(e *modelEndpoint, measured bool) (int64, int) {
	oldest, n := int64(math.MaxInt64), 0
	for _, r := range m.open {
		if r.e == e && (r.measured || !measured) {
			oldest = min(oldest, r.picked)
			n++
		}
	}
	return oldest, n
}

// oldestAny returns the pick time of e's oldest request in flight.
func (m *peakMachine) oldestAny(e *modelEndpoint) int64 {
	oldest, _ := m.oldest(e, false)
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
			"burst":  m.burst,
			"finish": m.finish,
			"drain":  m.drain,
			"wait":   m.wait,
			"":       m.check,
		})
	})
}
