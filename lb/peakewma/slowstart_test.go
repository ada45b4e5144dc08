package peakewma

import (
	"math"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// rampCfg is a config with a 10 s linear slow start whose factor starts at
// 0.1.
func rampCfg() Config {
	return Config{SlowStart: &slowstart.Config{SlowStartWindow: 10 * time.Second, Aggression: 1, MinWeightPercent: 10}}
}

// rampingHarness returns a harness over old warm endpoints (READY and past
// their window) and one new endpoint, the last, that became READY just now
// under cfg's slow start.
func rampingHarness(t *testing.T, cfg Config, old int) *lbtest.Harness {
	t.Helper()
	h := readyHarness(t, cfg, old)
	if cfg.SlowStart != nil {
		h.Advance(cfg.SlowStart.SlowStartWindow)
	}
	if err := h.UpdateAddresses(cfg, addrs(old+1)...); err != nil {
		t.Fatal(err)
	}
	h.SubConn(old).Ready()
	return h
}

// TestSlowStartDividesCost: while the new endpoint ramps, a pick compares
// its cost divided by its factor (0.5 halfway through a linear 10 s
// window) with the other's cost; the warm endpoint's factor is 1; after
// the window the picker has no factors and compares plain costs.
func TestSlowStartDividesCost(t *testing.T) {
	h := rampingHarness(t, rampCfg(), 1)
	if p := h.State().Picker.(*picker); p.factors == nil || p.factors[0] != 1 || p.factors[1] != 0.1 {
		t.Fatalf("factors just after READY: %v, want [1 0.1]", p.factors)
	}
	h.Advance(5 * time.Second)
	ds := data(h)
	check := func(wantFactor float64) {
		t.Helper()
		p := h.State().Picker.(*picker)
		if wantFactor == 1 && p.factors != nil {
			t.Fatalf("factors %v after the window, want none", p.factors)
		}
		if wantFactor != 1 && (len(p.factors) != 2 || p.factors[0] != 1 || p.factors[1] != wantFactor) {
			t.Fatalf("factors %v, want [1 %v]", p.factors, wantFactor)
		}
		for _, newEst := range []time.Duration{10 * time.Millisecond, 14990 * time.Microsecond, 15010 * time.Microsecond, 20 * time.Millisecond, 29 * time.Millisecond, 31 * time.Millisecond} {
			setEstimate(h, ds[0], 30*time.Millisecond)
			setEstimate(h, ds[1], newEst)
			r, err := p.Pick(lb.PickInfo{})
			if err != nil {
				t.Fatal(err)
			}
			want := ds[0].sc
			if float64(newEst)/wantFactor < float64(30*time.Millisecond) {
				want = ds[1].sc
			}
			if r.SubConn != want {
				t.Errorf("factor %v, estimates 30ms and %v: picked %v, want %v", wantFactor, newEst, r.SubConn, want)
			}
			r.Done(lb.DoneInfo{Err: lb.ErrRequestNotSent})
		}
	}
	check(0.5)
	h.Advance(5 * time.Second)
	check(1)
}

// TestRampingPickDoesNotAllocate: a pick and its Done allocate nothing while
// an endpoint ramps.
func TestRampingPickDoesNotAllocate(t *testing.T) {
	h := rampingHarness(t, rampCfg(), 3)
	h.Advance(2 * time.Second)
	p := h.State().Picker.(*picker)
	if p.factors == nil {
		t.Fatal("no factors while an endpoint ramps")
	}
	wantNoAllocs(t, p)
}

// newShare holds 400 picks in flight over 4 warm endpoints and the new
// one, all at the same estimate, and returns the new endpoint's share of
// them; then it finishes them unsent, which leaves the estimates alone.
func newShare(t *testing.T, h *lbtest.Harness) float64 {
	t.Helper()
	ds := data(h)
	for _, d := range ds {
		setEstimate(h, d, 20*time.Millisecond)
	}
	p := h.State().Picker
	var rs []lb.PickResult
	n := 0
	for range 400 {
		r, err := p.Pick(lb.PickInfo{})
		if err != nil {
			t.Fatal(err)
		}
		if r.SubConn == ds[len(ds)-1].sc {
			n++
		}
		rs = append(rs, r)
	}
	for _, r := range rs {
		r.Done(lb.DoneInfo{Err: lb.ErrRequestNotSent})
	}
	return float64(n) / 400
}

// TestNewEndpointShareRisesWithFactor: with the same picks in flight, a
// ramping endpoint's share grows with its factor, stays below what the
// same scenario without slow start gives it until the window ends, and
// matches it afterwards (within sampling noise).
func TestNewEndpointShareRisesWithFactor(t *testing.T) {
	plain := newShare(t, rampingHarness(t, Config{}, 4))
	h := rampingHarness(t, rampCfg(), 4)
	var shares []float64
	for _, at := range []time.Duration{0, 3 * time.Second, 3 * time.Second, 4 * time.Second} {
		h.Advance(at)
		shares = append(shares, newShare(t, h))
	}
	t.Logf("new endpoint's share at factors 0.1, 0.3, 0.6, 1: %v; without slow start %v", shares, plain)
	for i := range shares[:3] {
		if shares[i] >= shares[i+1] {
			t.Errorf("share %v at step %d not below %v at the next: %v", shares[i], i, shares[i+1], shares)
		}
		if shares[i] >= plain {
			t.Errorf("share %v at step %d not below %v without slow start", shares[i], i, plain)
		}
	}
	if d := shares[3] - plain; d < -0.03 || d > 0.03 {
		t.Errorf("share %v after the window, want about %v as without slow start", shares[3], plain)
	}
}

// TestRampingEndpointsAreDrawnByFactor: while endpoints ramp, the two
// candidates of a pick are distinct and drawn in proportion to their
// factors. Three warm endpoints and two new ones at factor 0.1, every
// estimate equal and nothing in flight: a new endpoint (its cost divided
// by 0.1) loses to any warm one, so it is picked only when both draws are
// new, about 2·(0.1/3.2)·(0.1/3.1) of the picks (0.2%), where uniform
// draws give (2/5)·(1/4) = 10%.
func TestRampingEndpointsAreDrawnByFactor(t *testing.T) {
	cfg := rampCfg()
	h := readyHarness(t, cfg, 3)
	h.Advance(cfg.SlowStart.SlowStartWindow)
	if err := h.UpdateAddresses(cfg, addrs(5)...); err != nil {
		t.Fatal(err)
	}
	h.SubConn(3).Ready()
	h.SubConn(4).Ready()
	ds := data(h)
	for _, d := range ds {
		setEstimate(h, d, 20*time.Millisecond)
	}
	p := h.State().Picker.(*picker)
	if p.draw == nil {
		t.Fatal("no weighted draw while endpoints ramp")
	}
	const picks = 40_000
	first := make([]int, len(ds))
	for k := range uint64(picks) {
		i, j := p.sampleRamping(k * weyl)
		if i == j {
			t.Fatalf("state %d: candidates %d and %d, want distinct", k, i, j)
		}
		first[i]++
	}
	for i, n := range first {
		want := picks * p.factors[i] / 3.2
		if math.Abs(float64(n)-want) > 4*math.Sqrt(want) {
			t.Errorf("entry %d (factor %v) drawn first %d times of %d, want about %.0f", i, p.factors[i], n, picks, want)
		}
	}
	n := 0
	for range picks {
		r, err := p.Pick(lb.PickInfo{})
		if err != nil {
			t.Fatal(err)
		}
		if r.SubConn == ds[3].sc || r.SubConn == ds[4].sc {
			n++
		}
		r.Done(lb.DoneInfo{Err: lb.ErrRequestNotSent})
	}
	if want := picks * 2 * 0.1 / 3.2 * 0.1 / 3.1; math.Abs(float64(n)-want) > 4*math.Sqrt(want)+2 {
		t.Errorf("new endpoints picked %d times of %d, want about %.0f (uniform draws: %d)", n, picks, want, picks/10)
	}
}

// TestSampleRampingOneEntry: a picker of one ramping entry samples it twice.
func TestSampleRampingOneEntry(t *testing.T) {
	h := readyHarness(t, rampCfg(), 1) // READY under slow start: it ramps
	p := h.State().Picker.(*picker)
	if p.draw == nil {
		t.Fatal("no weighted draw while the endpoint ramps")
	}
	for k := range uint64(100) {
		if i, j := p.sampleRamping(k * weyl); i != 0 || j != 0 {
			t.Fatalf("one entry: sampled %d and %d", i, j)
		}
	}
	if _, err := p.Pick(lb.PickInfo{}); err != nil {
		t.Fatal(err)
	}
}
