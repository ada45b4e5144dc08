package slowstart

import (
	"math"
	"math/bits"
)

// Sampler draws an index with probability in proportion to its weight, in
// constant time, from one uniformly distributed 64-bit number: Vose's alias
// method. Power-of-choices pickers (least_request_experimental,
// peak_ewma_experimental) draw their candidates with it while an endpoint
// ramps, weighted by the endpoints' slow start factors, so that a ramping
// endpoint is drawn as often as its factor says (as Envoy's least request
// does when weights differ: its selection follows weight × factor), and
// not as often as its peers from its first second (docs/choices.md).
//
// Make one with [NewSampler]. A Sampler is immutable: [Sampler.Index] is
// safe for concurrent use and never allocates.
type Sampler struct {
	// keep[i] is the chance, over 2^64, that the column i drawn keeps its
	// own index rather than alias[i].
	keep  []uint64
	alias []int32
}

// NewSampler returns a sampler over weights, each positive and finite
// (slow start factors are in (0, 1]); a weight that is not (0, NaN, below
// 0, infinite) counts as the smallest positive one of the others, or 1 if
// there is none, so a bad weight cannot starve or flood an index. weights
// must not be empty.
func NewSampler(weights []float64) Sampler {
	n := len(weights)
	w := make([]float64, n)
	least := math.Inf(1)
	for _, v := range weights {
		if v > 0 && !math.IsInf(v, 0) {
			least = min(least, v)
		}
	}
	if math.IsInf(least, 0) {
		least = 1
	}
	sum := 0.0
	for i, v := range weights {
		if !(v > 0) || math.IsInf(v, 0) {
			v = least
		}
		w[i] = v
		sum += v
	}
	s := Sampler{keep: make([]uint64, n), alias: make([]int32, n)}
	// Scale to a mean of 1, then pair each column below 1 with one above
	// it, which gives the small column the rest of its height.
	var small, large []int
	for i := range w {
		w[i] *= float64(n) / sum
		s.alias[i] = int32(i)
		if w[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		lo, hi := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		s.keep[lo], s.alias[lo] = threshold(w[lo]), int32(hi)
		w[hi] -= 1 - w[lo]
		if w[hi] < 1 {
			large = large[:len(large)-1]
			small = append(small, hi)
		}
	}
	// What is left is 1 up to rounding: those columns keep their index.
	for _, i := range append(small, large...) {
		s.keep[i], s.alias[i] = math.MaxUint64, int32(i)
	}
	return s
}

// threshold returns p (in [0, 1)) over 2^64.
func threshold(p float64) uint64 {
	switch {
	case !(p > 0):
		return 0
	case p >= 1:
		return math.MaxUint64
	}
	return uint64(p * (1 << 64))
}

// Len returns the number of indices.
func (s *Sampler) Len() int { return len(s.keep) }

// Index returns the index that the uniformly distributed number r draws:
// the high half of r·n picks a column, the low half (a fraction, with 64
// bits) decides between the column's index and its alias. Each index i is
// returned for a share of the 2^64 values of r within 2^-64·n of
// weight[i] over the sum of the weights.
func (s *Sampler) Index(r uint64) int {
	col, frac := bits.Mul64(r, uint64(len(s.keep)))
	if frac < s.keep[col] {
		return int(col)
	}
	return int(s.alias[col])
}
