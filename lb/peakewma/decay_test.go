package peakewma

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestDecayTableErrorBound: the decay weight read from the tables is within
// 1e-13 relative of math.Exp's, for every decay time a config allows and
// every elapsed tick count, in the tables' range (both tables' corners
// included) and beyond it, where it is math.Exp's exactly.
func TestDecayTableErrorBound(t *testing.T) {
	const bound = 1e-13
	rapid.Check(t, func(t *rapid.T) {
		tau := time.Duration(rapid.Int64Range(int64(MinDecayTime), int64(MaxDuration)).Draw(t, "tau"))
		d := newDecay(tau)
		k := rapid.OneOf(
			rapid.Int32Range(1, decayTableTicks-1),
			rapid.SampledFrom([]int32{1, decayLo - 1, decayLo, decayLo + 1, decayTableTicks - decayLo, decayTableTicks - 1}),
			rapid.Int32Range(decayTableTicks, math.MaxInt32),
		).Draw(t, "ticks")
		got := d.weight(k)
		want := math.Exp(float64(int64(k)<<tickBits) * (-1 / float64(tau)))
		switch {
		case k >= decayTableTicks && got != want:
			t.Fatalf("τ %v, %d ticks (beyond the tables): %v, want math.Exp's %v", tau, k, got, want)
		case math.Abs(got-want) > bound*want:
			t.Fatalf("τ %v, %d ticks: %v, math.Exp %v: relative error %.3g above %g", tau, k, got, want, math.Abs(got-want)/want, bound)
		}
	})
}

// TestDecayTableWorstCase: at the smallest decay time, where the tables'
// exponents are largest (about 172 at the last entry), every table weight
// is within the bound of math.Exp's.
func TestDecayTableWorstCase(t *testing.T) {
	d := newDecay(MinDecayTime)
	worst := 0.0
	for k := int32(1); k < decayTableTicks; k++ {
		want := math.Exp(float64(int64(k)<<tickBits) * (-1 / float64(MinDecayTime)))
		worst = max(worst, math.Abs(d.weight(k)-want)/want)
	}
	if worst > 1e-13 {
		t.Fatalf("worst relative error %.3g, above 1e-13", worst)
	}
	t.Logf("worst relative error at τ = %v: %.3g", MinDecayTime, worst)
}

// TestMeterKeepsTheTableOfItsDecayTime: an update with the decay time in
// force keeps the meter's table (no allocation, pickers share it); a new
// decay time replaces it.
func TestMeterKeepsTheTableOfItsDecayTime(t *testing.T) {
	h := readyHarness(t, Config{}, 2)
	m := data(h)[0].m
	before := m.decay.Load()
	if err := h.UpdateAddresses(Config{FailurePenalty: 2 * time.Second}, addrs(2)...); err != nil {
		t.Fatal(err)
	}
	if m.decay.Load() != before {
		t.Fatal("an update with the same decay time replaced the table")
	}
	if err := h.UpdateAddresses(Config{DecayTime: time.Second}, addrs(2)...); err != nil {
		t.Fatal(err)
	}
	if d := m.decay.Load(); d == before || d.tau != time.Second || d.lo[1] != math.Exp(-float64(tickDur)/float64(time.Second)) {
		t.Fatalf("after a new decay time: table %p (before %p), τ %v", d, before, d.tau)
	}
}
