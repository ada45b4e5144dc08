package edf

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// A table holds one whole period of the schedule, entry indices packed in
// as few bits as the entries need (bits.Len(n-1)), when that fits
// tableBudget bits per entry: a period of at most 4n picks (equal or
// nearly equal weights with a common factor), and weights such as 1..100
// (about 50n picks) or 63..64 (about 63.5n) at every n. A pick is then one
// atomic add, a check of its chunk's ready bit and one or two loads of the
// packed words: about a round-robin counter's cost.
//
// A period of at most tableLimit*n picks is generated whole at build. A
// longer one is filled on demand, a chunk (64 to 1024 picks) at a time, so
// that building stays O(n): the pick that finds its chunk not ready locks
// mu and generates it with the bucket generator (gen.go), continuing the
// generator's current run when the chunk is near it and repositioning the
// generator with a seek (O(n log maxW)) otherwise (after a Skip or a random
// start). The first pass through the period therefore costs about what a
// ring costs per pick; every later pass reads the table. Once every chunk
// is ready the generator's state is dropped.
//
// Words are written only under mu and only with final values (a bit is
// either 0, not generated yet, or its final value), so the writer merges
// into a word with an OR and may write a position twice; a chunk's ready
// bit is set after its words are stored, and a reader that sees the bit
// reads the final words. A reader may load the word after its own, which
// can belong to a chunk being written; both loads are atomic and the bits
// of the other chunk are masked off.
const (
	// tableBudget is the table's size limit in bits per entry (192 bytes;
	// with the items, the weights and, while the table is being filled,
	// the generator, about 256 bytes per entry at most).
	tableBudget = 192 * 8
	// tableLimit bounds the period generated whole at build.
	tableLimit = 4
)

type table struct {
	words  []atomic.Uint64 // period*bits bits, and one word of padding
	ready  []atomic.Uint64 // bit c set: chunk c holds its final picks
	bits   uint64          // bits per pick
	mask   uint64          // 1<<bits - 1
	cshift uint32          // log2 of the picks per chunk
	w      []uint32        // the reduced weights (the scheduler's)
	maxW   uint32
	period uint64

	mu sync.Mutex
	// Guarded by mu. The generator's current run wrote the positions
	// runFrom, runFrom+1, ... up to, not including, runEnd, counted on from
	// runFrom without reducing modulo the period (runFrom < period); the
	// generator's next point is position runEnd mod period. run is false
	// when the generator is not positioned. The generator is set up by
	// the first fill (or by NewFrom), not at build, so that a table
	// nobody picks from keeps no generator state.
	gen     generator
	run     bool
	runFrom uint64
	runEnd  uint64
	missing uint64   // chunks not ready
	buf     []uint32 // a chunk's picks before packing
	// runCnt[i] is the number of picks of entry i in the current period
	// before position runEnd; nil when the generator is not set up.
	runCnt []uint32
	// first[c] is j for the first pick of chunk c, the grid point j/w_k
	// of its entry k: written with the chunk's first position, read once
	// the chunk is ready, so that counts finds the position of a chunk's
	// start in O(n) (positionAt) instead of a seek.
	first []uint32
}

// tableBits returns the bits a table over n > 1 entries uses per pick.
func tableBits(n int) uint64 { return uint64(bits.Len(uint(n - 1))) }

// useTable reports whether a period of period picks over n > 1 entries
// fits the table budget.
func useTable(n int, period uint64) bool {
	return period <= tableBudget/tableBits(n)*uint64(n)
}

// newTable returns a table of the schedule of reduced weights w (sum
// period, n = len(w) > 1), generated whole if eager, else empty.
func newTable(w []uint32, maxW uint32, period uint64, eager bool) *table {
	n := len(w)
	t := &table{bits: tableBits(n), w: w, maxW: maxW, period: period}
	t.mask = 1<<t.bits - 1
	t.cshift = 6
	for t.cshift < 10 && 1<<t.cshift < 2*n {
		t.cshift++
	}
	chunks := (period + 1<<t.cshift - 1) >> t.cshift
	t.words = make([]atomic.Uint64, (period*t.bits+63)/64+1)
	t.ready = make([]atomic.Uint64, (chunks+63)/64)
	t.first = make([]uint32, chunks)
	t.missing = chunks
	if eager {
		t.gen.init(w, maxW, period, int(period)) // one slice
		t.runCnt = make([]uint32, n)
		t.run = true
		t.generate(period)
	}
	return t
}

// initGen sets up the generator, not positioned yet, unless it is.
// t.mu must be held (or t not yet shared).
func (t *table) initGen() {
	if t.gen.e == nil {
		t.gen.init(t.w, t.maxW, t.period, max(len(t.w), 1<<t.cshift))
		t.runCnt = make([]uint32, len(t.w))
	}
}

// setConsumed records that n picks of entry i were made in the current
// period before the generator's next point, for gen.restart.
func (t *table) setConsumed(i int, n uint64) {
	t.gen.setConsumed(i, n)
	t.runCnt[i] = uint32(n)
}

// position starts a run at position pos, after the picks recorded by
// setConsumed (all 0 unless set). t.mu must be held (or t not yet shared).
func (t *table) position(pos uint64) {
	t.gen.restart()
	t.run, t.runFrom, t.runEnd = true, pos, pos
}

// isReady reports whether chunk c holds its final picks.
func (t *table) isReady(c uint64) bool { return t.ready[c>>6].Load()>>(c&63)&1 != 0 }

// at returns the entry at position p from the words, which must hold it.
func (t *table) at(p uint64) uint64 {
	o := p * t.bits
	i := o >> 6
	v := t.words[i].Load()>>(o&63) | t.words[i+1].Load()<<1<<(^o&63)
	return v & t.mask
}

// slow returns the entry at position p, generating it first if needed.
func (t *table) slow(p uint64) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := p >> t.cshift; !t.isReady(c) {
		t.fillFor(p)
	}
	return t.at(p)
}

// fillFor generates the table's chunk holding position p, or at least
// position p itself, if needed. t.mu must be held.
func (t *table) fillFor(p uint64) {
	period := t.period
	if t.run {
		u := p // p's position counted on from runFrom
		if u < t.runFrom {
			u += period
		}
		if u < t.runEnd {
			return // the current run wrote it
		}
		if u-t.runEnd <= 2<<t.cshift+uint64(len(t.gen.w)) {
			// Near the run: continue it through p's chunk and the next.
			end := min((p>>t.cshift+2)<<t.cshift, period)
			t.generate(end - p + u - t.runEnd)
			return
		}
	}
	// Reposition the generator at the start of p's chunk.
	start := p >> t.cshift << t.cshift
	t.initGen()
	for i := range t.w {
		t.setConsumed(i, 0)
	}
	if start != 0 {
		seek(t.w, t.maxW, start, t.setConsumed)
	}
	t.position(start)
	t.generate(min(start+2<<t.cshift, period) - start)
}

// generate writes the generator's next k points at positions runEnd,
// runEnd+1, ... (modulo the period) and marks the chunks they complete.
// t.mu must be held.
func (t *table) generate(k uint64) {
	period := t.period
	if t.buf == nil {
		t.buf = make([]uint32, 1<<t.cshift)
	}
	for k > 0 && t.missing > 0 {
		pos := t.runEnd % period
		// Up to the end of pos's chunk (or of the period).
		end := min((pos>>t.cshift+1)<<t.cshift, period)
		m := min(k, end-pos)
		buf := t.buf[:m]
		t.gen.emit(buf)
		t.pack(pos, buf)
		c := pos >> t.cshift
		start := c << t.cshift
		if pos == start && !t.isReady(c) {
			// Never rewritten once the chunk is ready: counts reads it
			// without the lock.
			t.first[c] = t.runCnt[buf[0]] + 1
		}
		if end == period && pos+m == end {
			clear(t.runCnt) // a new period
		} else {
			for _, x := range buf {
				t.runCnt[x]++
			}
		}
		t.runEnd += m
		k -= m
		if pos+m == end && t.runEnd-(end-start) >= t.runFrom && !t.isReady(c) {
			// The run covered the whole chunk.
			t.ready[c>>6].Or(1 << (c & 63))
			t.missing--
		}
	}
	if t.missing == 0 {
		t.gen, t.buf, t.runCnt, t.run = generator{}, nil, nil, false
	}
}

// pack ORs the entry indices x into the words from position pos on.
func (t *table) pack(pos uint64, x []uint32) {
	o := pos * t.bits
	i, nb := o>>6, o&63
	var acc uint64
	for _, v := range x {
		acc |= uint64(v) << nb
		nb += t.bits
		if nb >= 64 {
			t.words[i].Store(t.words[i].Load() | acc)
			i++
			nb -= 64
			acc = uint64(v) >> (t.bits - nb) // the bits that did not fit
		}
	}
	if nb > 0 {
		t.words[i].Store(t.words[i].Load() | acc)
	}
}

// counts sets cnt[i] to the number of picks of entry i among the first pos
// of the period, 0 < pos < period, from the chunk holding position pos-1
// when it is ready: the counts at the chunk's start follow from its first
// pick's grid point (first) in O(n), and the chunk's picks before pos are
// counted, O(chunk). It reports false if that chunk is not ready; the
// caller then seeks.
func (t *table) counts(pos uint64, cnt []uint64) bool {
	c := (pos - 1) >> t.cshift
	if !t.isReady(c) {
		return false
	}
	start := c << t.cshift
	if start != 0 {
		// The points before the chunk's first, (j/w_k, k): those below
		// j/w_k, and those at it of entries before k.
		k := t.at(start)
		positionAt(t.w, uint64(t.first[c]), uint64(t.w[k]), int(k)-1, func(i int, n uint64) { cnt[i] = n })
	}
	for p := start; p < pos; p++ {
		cnt[t.at(p)]++
	}
	return true
}
