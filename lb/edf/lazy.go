package edf

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// A lazy table is the table of one whole period for at most lazyMaxN
// entries whose period is longer than the eager table's limit (tableLimit
// picks per entry) but at most lazyLimit picks per entry: nearly equal
// weights without a common factor (63 and 64), or small ones (1..100). It
// is filled on demand rather than at build, so building costs O(n) and
// not O(period): the first pass through the period generates it, a word
// of 16 picks at a time, and every later pick is one atomic add, a check
// of the filled count and one load, about the eager table's cost.
const (
	lazyMaxN  = 16  // entry indices fit 4 bits
	lazyLimit = 128 // picks per entry at most: a table of at most 64 bytes per entry
)

// lazyTable holds positions [0, ready) of the period, 4 bits a pick, 16
// picks a word. A word is stored once, whole, before ready is raised past
// it, and never written again, so a pick whose position is below ready
// reads it without a lock. A pick at or above ready locks mu and generates
// the words up to its own.
//
// The generator keeps, per entry, the number of its points generated and
// the exact fixed-point key of its next point, floor((j+1) * 2^shift /
// w_i) shifted left by 4 with the entry's index in the low bits, as the
// scan generator does (scan.go): the smallest key is the specification's
// next pick, tie-break included. A point is the minimum over the n keys
// and one division; it is generated once per scheduler. Both slices are
// dropped once the period is full.
type lazyTable struct {
	words []atomic.Uint64
	ready atomic.Uint64

	mu    sync.Mutex
	key   []uint64 // guarded by mu; nil once full
	drawn []uint32 // guarded by mu: points of each entry generated; nil once full
	shift uint
}

// newLazyTable returns an empty lazy table for reduced weights w whose
// largest is maxW and whose sum is period, with at most lazyMaxN entries
// and maxW < 2^16.
func newLazyTable(w []uint32, maxW uint32, period uint64) *lazyTable {
	lt := &lazyTable{
		words: make([]atomic.Uint64, (period+15)/16),
		key:   make([]uint64, len(w)),
		drawn: make([]uint32, len(w)),
		shift: uint(2 * bits.Len32(maxW)),
	}
	for i, x := range w {
		lt.key[i] = (uint64(1)<<lt.shift/uint64(x))<<4 | uint64(i)
	}
	return lt
}

// entry returns the entry index at position p of the period, generating
// the table through p first if needed.
func (lt *lazyTable) entry(p uint64, w []uint32, period uint64) uint32 {
	if p >= lt.ready.Load() {
		lt.mu.Lock()
		lt.fillThrough(p, w, period)
		lt.mu.Unlock()
	}
	return uint32(lt.words[p>>4].Load()>>(p&15<<2)) & 15
}

// fillThrough generates the table's words through the one holding
// position p. lt.mu must be held.
func (lt *lazyTable) fillThrough(p uint64, w []uint32, period uint64) {
	key, drawn, shift := lt.key, lt.drawn, lt.shift&63
	for r := lt.ready.Load(); r <= p; {
		end := min(r+16, period)
		var v uint64
		for s := uint(0); r < end; r, s = r+1, s+4 {
			best := key[0]
			for _, k := range key[1:] {
				best = min(best, k)
			}
			i := best & 15
			drawn[i]++
			key[i] = (uint64(drawn[i]+1)<<shift/uint64(w[i]))<<4 | i
			v |= i << s
		}
		lt.words[(end-1)>>4].Store(v)
		lt.ready.Store(end)
	}
	if lt.ready.Load() == period {
		lt.key, lt.drawn = nil, nil
	}
}

// counts sets cnt[i] to the number of picks of entry i among the first pos
// of the period, for len(cnt) entries, from the table when it holds them
// and pos is at most tableLimit picks per entry (the eager table's cost),
// and reports whether it did; otherwise the caller seeks.
func (lt *lazyTable) counts(pos uint64, cnt []uint64) bool {
	if pos > lt.ready.Load() || pos > tableLimit*uint64(len(cnt)) {
		return false
	}
	for p := range pos {
		cnt[uint32(lt.words[p>>4].Load()>>(p&15<<2))&15]++
	}
	return true
}
