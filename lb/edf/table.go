package edf

import (
	"cmp"
	"slices"
)

// buildTable returns one period of the schedule: entry indices in pick
// order, for reduced weights w summing to period.
//
// Entries with equal weights move in lockstep, so the work is done per
// distinct weight d rather than per entry. The distinct values j/d
// (1 <= j <= d) are enumerated in increasing order, with the Farey sequence
// when the largest weight is small and with a heap over the distinct
// weights otherwise. At a value reduced to lowest terms p/q, exactly the
// entries whose weight is a multiple of q have a deadline, and they are
// picked in index order; that list depends on q only, so it is computed
// once per divisor q. Cost: O(n * divisors per weight) to list the entries
// by divisor, plus O(sum over distinct d of (sqrt(d) + d log D)) for D
// distinct weights (or O(maxD^2) = O(sum of d) with the Farey sequence),
// plus one copy per slot of the period table.
func buildTable[I uint16 | uint32](w []uint32, period uint64) []I {
	// Distinct weights, and the denominators (divisors) each one has.
	type group struct {
		d    uint32
		dens []int32 // ids of the divisors of d
	}
	var groups []group
	groupOf := make(map[uint32]int32) // weight -> index in groups
	denOf := make(map[uint32]int32)   // divisor -> id
	var size []int                    // id -> number of entries it lists
	gid := make([]int32, len(w))      // entry -> index in groups
	for i, x := range w {
		g, ok := groupOf[x]
		if !ok {
			g = int32(len(groups))
			groupOf[x] = g
			var dens []int32
			add := func(q uint32) {
				id, ok := denOf[q]
				if !ok {
					id = int32(len(size))
					denOf[q] = id
					size = append(size, 0)
				}
				dens = append(dens, id)
			}
			for q := uint32(1); uint64(q)*uint64(q) <= uint64(x); q++ {
				if x%q == 0 {
					add(q)
					if q != x/q {
						add(x / q)
					}
				}
			}
			groups = append(groups, group{d: x, dens: dens})
		}
		gid[i] = g
		for _, id := range groups[g].dens {
			size[id]++
		}
	}
	// byDen[id]: the entries whose weight the divisor divides, in index
	// order, all sharing one backing array.
	var total int
	for _, n := range size {
		total += n
	}
	backing := make([]I, total)
	byDen := make([][]I, len(size))
	for id, n := range size {
		byDen[id], backing = backing[:0:n], backing[n:]
	}
	for i, g := range gid {
		for _, id := range groups[g].dens {
			byDen[id] = append(byDen[id], I(i))
		}
	}

	tab := make([]I, 0, period)
	var maxD, sumD uint64
	for _, g := range groups {
		maxD = max(maxD, uint64(g.d))
		sumD += uint64(g.d)
	}
	if maxD*maxD <= 6*sumD {
		// The Farey sequence of order maxD lists every fraction in (0, 1]
		// with denominator at most maxD in increasing order, each in
		// lowest terms, at O(1) per term; it has about 0.3*maxD^2 terms,
		// so it is used when that is not much more than sumD.
		ids := make([]int32, maxD+1)
		for i := range ids {
			ids[i] = -1
		}
		for q, id := range denOf {
			ids[q] = id
		}
		a, b, c, d := uint64(0), uint64(1), uint64(1), maxD
		for c <= d {
			if id := ids[d]; id >= 0 {
				tab = append(tab, byDen[id]...)
			}
			k := (maxD + b) / d
			a, b, c, d = c, d, k*c-a, k*d-b
		}
		return tab
	}
	// Otherwise walk the values j/d of every distinct weight with a heap.
	// All groups start at 1/d, so the nodes sorted by decreasing d already
	// form a heap.
	h := make([]valueNode, len(groups))
	for i, g := range groups {
		h[i] = valueNode{j: 1, d: g.d}
	}
	slices.SortFunc(h, func(x, y valueNode) int { return cmp.Compare(y.d, x.d) })
	var lastJ, lastD uint64 = 0, 1
	for len(h) > 0 {
		top := h[0]
		if uint64(top.j)*lastD != lastJ*uint64(top.d) { // a new value
			tab = append(tab, byDen[denOf[top.d/gcd(top.j, top.d)]]...)
			lastJ, lastD = uint64(top.j), uint64(top.d)
		}
		if top.j == top.d {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		} else {
			h[0].j++
		}
		valueDown(h, 0)
	}
	return tab
}

// valueNode is the next value j/d of a group of entries of weight d.
type valueNode struct{ j, d uint32 }

// valueDown restores the binary min-heap property below node i.
func valueDown(h []valueNode, i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && uint64(h[c+1].j)*uint64(h[c].d) < uint64(h[c].j)*uint64(h[c+1].d) {
			c++
		}
		if uint64(h[i].j)*uint64(h[c].d) <= uint64(h[c].j)*uint64(h[i].d) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
