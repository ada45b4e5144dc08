// Package hist is a log-linear latency histogram in the manner of HDR
// histograms: values below 128 ns have a bucket each, and every power of two
// above is split into 128 equal buckets, so a bucket's midpoint is within
// 0.4% of every value in it. A histogram is 8,192 counters whatever it
// records: memory is bounded, never a list of values.
//
// A Histogram is not safe for concurrent use.
package hist

import (
	"math"
	"math/bits"
	"time"
)

// subBits is log2 of the number of buckets per power of two.
const subBits = 7

// sub is the number of buckets per power of two.
const sub = 1 << subBits

// buckets is the number of buckets: enough for every non-negative int64.
const buckets = (64 - subBits + 1) * sub

// Histogram counts durations in log-linear buckets. Its zero value is empty
// and ready to use.
type Histogram struct {
	counts   [buckets]uint64
	n        uint64
	sum      float64
	min, max time.Duration
}

// index returns the bucket of v (v >= 0).
func index(v uint64) int {
	if v < sub {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	return (shift+1)*sub + int(v>>uint(shift)) - sub
}

// bounds returns the smallest and largest value of bucket i.
func bounds(i int) (lo, hi uint64) {
	if i < sub {
		return uint64(i), uint64(i)
	}
	shift := uint(i/sub - 1)
	lo = uint64(i%sub+sub) << shift
	return lo, lo + (1 << shift) - 1
}

// Record counts d; a negative d counts as 0.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[index(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += float64(d)
}

// Count returns the number of values recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest value recorded (exact), 0 when empty.
func (h *Histogram) Max() time.Duration { return h.max }

// Min returns the smallest value recorded (exact), 0 when empty.
func (h *Histogram) Min() time.Duration { return h.min }

// Mean returns the mean of the values recorded (exact up to float64
// rounding), 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(math.Round(h.sum / float64(h.n)))
}

// Quantile returns the value at quantile q (0 <= q <= 1): the midpoint of
// the bucket holding the ceil(q·n)-th smallest value, clamped to the exact
// minimum and maximum. It returns 0 when the histogram is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bounds(i)
			mid := time.Duration(lo + (hi-lo)/2)
			return min(max(mid, h.min), h.max)
		}
	}
	return h.max
}

// FractionAtOrBelow returns the fraction of values recorded that are at
// most d, counting a bucket as at or below d when its midpoint is; 0 when
// empty.
func (h *Histogram) FractionAtOrBelow(d time.Duration) float64 {
	if h.n == 0 || d < 0 {
		return 0
	}
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		lo, hi := bounds(i)
		if time.Duration(lo+(hi-lo)/2) > d {
			break
		}
		seen += c
	}
	return float64(seen) / float64(h.n)
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Reset empties h.
func (h *Histogram) Reset() { *h = Histogram{} }
