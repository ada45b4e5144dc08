package edf

import "math/bits"

// Positions and virtual time.
//
// With reduced weights w_i (gcd 1) and period W = sum w_i, one period of
// the schedule consists of the grid points (j/w_i, i) for 1 <= j <= w_i,
// sorted by value and then by index: the EDF sequence from the initial state
// is exactly this list repeated forever, since picking the smallest
// (deadline, index) and pushing the next deadline of the same entry is a
// merge of the sorted per-entry lists j/w_i. A position pos in [0, W) is the
// number of points of the current period already picked. The functions here
// convert between a position and the virtual time of the pos-th point, in
// O(n log maxW) without walking the period.

// floorAt returns floor(m*x / 2^shift) for m < 2^shift, x < 2^(shift/2).
func floorAt(m, x uint64, shift uint) uint64 {
	hi, lo := bits.Mul64(m, x)
	if shift == 64 {
		return hi
	}
	return hi<<(64-shift) | lo>>shift
}

// seek finds the pos-th point of the period (1 <= pos <= W): it returns its
// value a/b (b is the weight of its entry) and the index of its entry. If
// consumed is not nil it is called for each entry i with the number of its
// points among the first pos.
//
// Let t be the largest multiple of 2^-shift, with 2^shift >= (maxW+1)^2,
// such that fewer than pos points have value <= t; found by bisection on
// the counting function C(t) = sum floor(t*w_i). Two different grid values
// j/w_a != k/w_b differ by at least 1/(w_a*w_b) > 2^-shift, so (t, t+2^-shift]
// holds exactly one grid value, the first one above t, and the pos-th point
// is among the entries tied there. Since t*W - n < C(t) <= t*W, the
// bisection starts from [pos/W, (pos+n)/W]: about log2(2*maxW) passes over
// the weights instead of 2*log2(maxW).
func seek(w []uint32, maxW uint32, pos uint64, consumed func(i int, n uint64)) (a, b uint64, last int) {
	shift := uint(2 * bits.Len32(maxW))
	m := threshold(w, shift, pos)
	// The next grid point after t of each entry is (f_i+1)/w_i; the
	// smallest of these is the value a/b of the pos-th point.
	var below uint64
	a, b = 2, 1 // larger than any point
	for _, x := range w {
		f := floorAt(m, uint64(x), shift)
		below += f
		if (f+1)*b < a*uint64(x) {
			a, b = f+1, uint64(x)
		}
	}
	// The tied entries at a/b, in index order, take the remaining
	// pos-below points.
	r := pos - below
	for i, x := range w {
		f := floorAt(m, uint64(x), shift)
		if r > 0 && (f+1)*b == a*uint64(x) {
			f++
			r--
			last = i
		}
		if consumed != nil {
			consumed(i, f)
		}
	}
	return a, b, last
}

// threshold returns the largest m < 2^shift with C(m/2^shift) < pos, for
// 1 <= pos <= W.
func threshold(w []uint32, shift uint, pos uint64) uint64 {
	below := func(c uint64) bool { // C(c/2^shift) < pos
		var n uint64
		for _, x := range w {
			if n += floorAt(c, uint64(x), shift); n >= pos {
				return false
			}
		}
		return true
	}
	if shift == 64 { // 2^shift does not fit: plain bisection, bit by bit
		var m uint64
		for bit := 63; bit >= 0; bit-- {
			if c := m | 1<<uint(bit); below(c) {
				m = c
			}
		}
		return m
	}
	var total uint64
	for _, x := range w {
		total += uint64(x)
	}
	// lo: the largest multiple of 2^-shift below pos/W, where C < pos.
	// hi: at or above (pos+n)/W, where C >= pos, or 2^shift.
	q, r := bits.Div64(pos>>(64-shift), pos<<shift, total)
	lo := q - 1
	if r != 0 {
		lo = q
	}
	hi := uint64(1) << shift
	if p := pos + uint64(len(w)); p < total {
		if q, r := bits.Div64(p>>(64-shift), p<<shift, total); q < hi {
			hi = q
			if r != 0 {
				hi++
			}
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if below(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// positionAt returns the number of points (j/w_i, i) of a period with
// j/w_i < a/b, or j/w_i = a/b and i <= p, for 0 < a/b <= 1. The result is in
// [0, W]; W means the whole period. If consumed is not nil it is called
// with each entry's share of that number.
func positionAt(w []uint32, a, b uint64, p int, consumed func(i int, n uint64)) uint64 {
	var pos uint64
	for i, x := range w {
		ax := a * uint64(x) // a <= b < 2^32, so no overflow
		c := ax / b
		if ax%b == 0 && i > p {
			c-- // the point exactly at a/b is still ahead
		}
		pos += c
		if consumed != nil {
			consumed(i, c)
		}
	}
	return pos
}
