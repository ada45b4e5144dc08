package slowstart_test

import (
	"math"
	"math/bits"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb/slowstart"
)

// counts draws m numbers spread evenly over [0, 2^64) (k·⌊2^64/m⌋) and
// counts the indices s returns for them.
func counts(s *slowstart.Sampler, m uint64) []uint64 {
	c := make([]uint64, s.Len())
	step := math.MaxUint64 / m
	for k := range m {
		c[s.Index(k*step)]++
	}
	return c
}

// TestSamplerFollowsTheWeights: over numbers spread evenly across the 64-bit
// range, each index is drawn in proportion to its weight, to within one
// draw per column and one for rounding: random weights (slow start
// factors from 0.001 to 1, and integer weights), 1 to 40 of them.
func TestSamplerFollowsTheWeights(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		w := make([]float64, n)
		sum := 0.0
		for i := range w {
			if rapid.Bool().Draw(rt, "integer") {
				w[i] = float64(rapid.IntRange(1, 1000).Draw(rt, "w"))
			} else {
				w[i] = rapid.Float64Range(0.001, 1).Draw(rt, "f")
			}
			sum += w[i]
		}
		s := slowstart.NewSampler(w)
		const m = 200_000
		for i, got := range counts(&s, m) {
			want := m * w[i] / sum
			if math.Abs(float64(got)-want) > float64(n)+2 {
				rt.Fatalf("weights %v: index %d drawn %d times of %d, want %.1f", w, i, got, m, want)
			}
		}
	})
}

// TestSamplerEdges: the first and last numbers of the range draw valid
// indices; one weight always draws 0; a weight that is zero, negative, NaN
// or infinite counts as the smallest valid weight (1 when none is valid).
func TestSamplerEdges(t *testing.T) {
	one := slowstart.NewSampler([]float64{0.3})
	for _, r := range []uint64{0, 1, math.MaxUint64} {
		if got := one.Index(r); got != 0 {
			t.Errorf("one weight: Index(%d) = %d", r, got)
		}
	}
	for _, tc := range []struct {
		in, as []float64
	}{
		{[]float64{0, 1, 0.5}, []float64{0.5, 1, 0.5}},
		{[]float64{math.NaN(), 0.2, math.Inf(1), -1}, []float64{0.2, 0.2, 0.2, 0.2}},
		{[]float64{0, math.NaN()}, []float64{1, 1}},
	} {
		s, want := slowstart.NewSampler(tc.in), slowstart.NewSampler(tc.as)
		if got, exp := counts(&s, 10_000), counts(&want, 10_000); !equal(got, exp) {
			t.Errorf("weights %v: counts %v, want those of %v: %v", tc.in, got, tc.as, exp)
		}
		for _, r := range []uint64{0, math.MaxUint64} {
			if i := s.Index(r); i < 0 || i >= len(tc.in) {
				t.Errorf("weights %v: Index(%d) = %d", tc.in, r, i)
			}
		}
	}
}

func equal(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// TestSamplerIndexDoesNotAllocate: Index allocates nothing.
func TestSamplerIndexDoesNotAllocate(t *testing.T) {
	s := slowstart.NewSampler([]float64{1, 0.1, 0.5, 1})
	r := uint64(1)
	if n := testing.AllocsPerRun(1000, func() { r, _ = bits.Mul64(r+0x9e3779b97f4a7c15, 3); _ = s.Index(r) }); n != 0 {
		t.Fatalf("Index allocates %v times", n)
	}
}
