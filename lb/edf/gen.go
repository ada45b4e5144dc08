package edf

import (
	"math/bits"
	"slices"
	"sync/atomic"
)

// generator produces the schedule in order, one slice of virtual time at a
// time, in O(n) memory whatever the weights.
//
// Virtual time is measured in buckets: a period (virtual time 1 in the
// units of seek.go) is m buckets, m being the period itself, so a period of
// W picks has on average one point per bucket. The point (j/w_i, i) lies in
// bucket floor(j*m/w_i), at offset frac/w_i within it, frac = j*m mod w_i;
// both are kept per entry and advanced by adding m = q_i*w_i + r_i, so no
// division happens after reset. A slice is width consecutive buckets: every
// entry's points in it are counted (pass 1) and then placed by a counting
// sort on the bucket (pass 2), visiting entries in index order, so within a
// bucket the points are in index order. A stable sort on the exact value
// (frac_a/w_a against frac_b/w_b) orders the few buckets that hold
// different values, and ties stay in index order, as the specification
// wants. A slice costs O(n + points in it); width >= n makes that O(1) per
// point.
type generator struct {
	w     []uint32 // reduced weights; shared, read-only
	maxW  uint32
	shift uint32 // 0 for buckets; else a scan generator's key bits (see scan.go)
	m     uint64 // buckets per period: the period
	e     []genEntry
	width uint64     // buckets per slice
	start uint64     // first bucket of the next slice
	count []uint32   // per bucket of the slice: count, then offsets
	out   []point    // the current slice's points in schedule order
	head  int        // next point of out to hand out
	scan  *scanState // a scan generator's state, nil for buckets
}

// genEntry is one entry's next point and step, kept together so that a
// slice touches one cache line per entry.
type genEntry struct {
	bucket uint64 // bucket of the entry's next point
	q      uint64 // m / w
	frac   uint32 // offset of that point within its bucket, times w
	r      uint32 // m % w
}

// point is one pick in a slice: the entry and its offset in its bucket.
type point struct{ frac, idx uint32 }

// init sets up a generator for reduced weights w with sum period,
// positioned at the start of a period. slice is the number of buckets per
// slice, at least len(w).
func (g *generator) init(w []uint32, maxW uint32, period uint64, slice int) {
	n := len(w)
	*g = generator{
		w: w, maxW: maxW, m: period,
		e:     make([]genEntry, n),
		width: uint64(slice),
		count: make([]uint32, slice),
		// A slice holds at most floor(width*w_i/m)+1 points of entry i:
		// width+n in all.
		out: make([]point, 0, slice+n),
	}
	// At the start of a period every entry's next point is 1/w: bucket
	// m/w and offset m%w, the step itself.
	g.start = ^uint64(0)
	for i, x := range w {
		q := period / uint64(x)
		r := uint32(period - q*uint64(x))
		g.e[i] = genEntry{bucket: q, q: q, frac: r, r: r}
		g.start = min(g.start, q)
	}
}

// reset positions the generator after the first pos picks of a period,
// 0 <= pos < period, in O(n log maxW).
func (g *generator) reset(pos uint64) {
	for i := range g.w {
		g.setConsumed(i, 0)
	}
	if pos != 0 {
		seek(g.w, g.maxW, pos, g.setConsumed)
	}
	g.restart()
}

// setConsumed records that n points of entry i have been picked, for
// restart. Entries not set count as 0 after reset.
func (g *generator) setConsumed(i int, n uint64) {
	if g.scan != nil {
		g.scan.key[i] = n
		return
	}
	g.e[i].bucket = n
}

// restart positions the generator after the points recorded by
// setConsumed: each entry's next point is the one after them.
func (g *generator) restart() {
	if g.shift != 0 {
		g.restartScan()
		return
	}
	g.start = ^uint64(0)
	for i := range g.e {
		e := &g.e[i]
		// The next point is j/w_i with j = consumed+1 <= w_i+1, and
		// j*m < w_i*2^64 because m < 2^63.
		hi, lo := bits.Mul64(e.bucket+1, g.m)
		b, f := bits.Div64(hi, lo, uint64(g.w[i]))
		e.bucket, e.frac = b, uint32(f)
		g.start = min(g.start, b)
	}
	g.out, g.head = g.out[:0], 0
}

// fill stores the next len(words) << (6-pack) picks into words, 1<<pack
// bits each.
func (g *generator) fill(words []atomic.Uint64, pack uint) {
	if g.shift != 0 {
		g.fillScan(words, pack)
		return
	}
	step := uint(1) << pack
	out, head := g.out, g.head
	for k := range words {
		var v uint64
		for s := uint(0); s < 64; s += step {
			for head == len(out) {
				g.slice()
				out, head = g.out, 0
			}
			v |= uint64(out[head].idx) << s
			head++
		}
		words[k].Store(v)
	}
	g.head = head
}

// emit stores the entry indices of the next len(dst) picks into dst. It
// serves the bucket generator only (tables use no scan generator).
func (g *generator) emit(dst []uint32) {
	out, head := g.out, g.head
	for k := range dst {
		for head == len(out) {
			g.slice()
			out, head = g.out, 0
		}
		dst[k] = out[head].idx
		head++
	}
	g.head = head
}

// handedOut sets cnt[i] to the number of points of entry i handed out
// since the start of the period the generator was last restarted in.
func (g *generator) handedOut(cnt []uint64) {
	if g.shift != 0 {
		g.handedOutScan(cnt)
		return
	}
	for i := range g.e {
		// The next point is J/w with J*m = bucket*w + frac.
		e := &g.e[i]
		hi, lo := bits.Mul64(e.bucket, uint64(g.w[i]))
		lo, carry := bits.Add64(lo, uint64(e.frac), 0)
		j, _ := bits.Div64(hi+carry, lo, g.m) // J < 2^64, so hi < m
		cnt[i] = j - 1
	}
	for _, p := range g.out[g.head:] {
		cnt[p.idx]--
	}
}

// slice computes the points of the next slice into out. Every slice holds a
// point: the heaviest entry has one every m/maxW <= n <= width buckets.
func (g *generator) slice() {
	start, end := g.start, g.start+g.width
	cnt := g.count // all 0 (see the end)
	for i := range g.e {
		if g.e[i].bucket >= end {
			continue // no point of i in this slice
		}
		b, f, q, r, d := g.next(i)
		for b < end {
			cnt[b-start]++
			b, f = step(b, f, q, r, d)
		}
	}
	var total uint32
	for k, c := range cnt {
		cnt[k] = total
		total += c
	}
	out := g.out[:total]
	// The same walk over each entry's points as above, now placing them
	// and keeping where each entry stops. The two loops share next and
	// step, which inline; a walk shared through a callback is not inlined
	// and made BenchmarkGenerate 2 to 3 times slower (2026-11-26).
	for i := range g.e {
		if g.e[i].bucket >= end {
			continue // no point of i in this slice
		}
		b, f, q, r, d := g.next(i)
		for b < end {
			k := cnt[b-start]
			out[k] = point{frac: uint32(f), idx: uint32(i)}
			cnt[b-start] = k + 1
			b, f = step(b, f, q, r, d)
		}
		g.e[i].bucket, g.e[i].frac = b, uint32(f)
	}
	// cnt[k] is now the end of bucket k in out; clear it for the next
	// slice on the way.
	var lo uint32
	for k, hi := range cnt {
		cnt[k] = 0
		if hi-lo >= 2 {
			if hi-lo == 2 {
				a, b := out[lo], out[lo+1]
				if uint64(a.frac)*uint64(g.w[b.idx]) > uint64(b.frac)*uint64(g.w[a.idx]) {
					out[lo], out[lo+1] = b, a
				}
			} else {
				g.order(out[lo:hi])
			}
		}
		lo = hi
	}
	g.out, g.head, g.start = out, 0, end
}

// next returns entry i's next point (bucket b, offset f) and its step
// (q, r) and weight d, the arguments of step.
func (g *generator) next(i int) (b, f, q, r, d uint64) {
	e := &g.e[i]
	return e.bucket, uint64(e.frac), e.q, uint64(e.r), uint64(g.w[i])
}

// step advances a point (bucket b, offset f) by one step m = q*d + r of
// an entry of weight d, without a branch: f < d < 2^32, so f+r-d is
// negative exactly when there is no carry.
func step(b, f, q, r, d uint64) (uint64, uint64) {
	f += r
	carry := 1 - (f-d)>>63
	return b + q + carry, f - d&-carry
}

// order sorts the points of one bucket by value, keeping index order among
// equal values (they arrive in index order).
func (g *generator) order(p []point) {
	w := g.w
	cmpPoints := func(a, b point) int {
		x, y := uint64(a.frac)*uint64(w[b.idx]), uint64(b.frac)*uint64(w[a.idx])
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	sorted := true
	for k := 1; k < len(p) && sorted; k++ {
		sorted = cmpPoints(p[k-1], p[k]) <= 0
	}
	if sorted {
		return
	}
	if len(p) > 32 {
		slices.SortStableFunc(p, cmpPoints)
		return
	}
	for k := 1; k < len(p); k++ {
		for j := k; j > 0 && cmpPoints(p[j-1], p[j]) > 0; j-- {
			p[j-1], p[j] = p[j], p[j-1]
		}
	}
}
