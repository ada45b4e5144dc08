package edf

import (
	"sync"
	"sync/atomic"
)

// ringSlots is the number of blocks a ring holds: the block being picked
// from, the one before it (late readers), and the ones generated ahead.
const ringSlots = 4

// noBlock marks a slot that holds no block; block numbers are below
// 2^(64-shift), so it is never one.
const noBlock = ^uint64(0)

// ring hands out the schedule behind a ticket counter (Scheduler.next): the
// pick with ticket t is entry number t of the schedule counted from the
// ring's origin, read from block t>>shift. Blocks of B = 1<<shift picks are
// produced in order by a generator under mu and kept in ringSlots slots;
// the first pick of block b generates block b+ringSlots-2 if the generator
// is free (TryLock), so picks normally find their block ready and take no
// lock. A pick whose block is not ready yet locks mu and generates it; a
// pick whose block was already replaced (its goroutine stalled for
// (ringSlots-2)*B picks of others) computes its entry directly from its
// position with seek, O(n log maxW), without holding mu.
//
// Slots are seqlocks: a slot's block number is cleared before its words
// are rewritten and set after, and a reader accepts a word only if the
// slot held its block before and after reading it. Words are atomic, so
// a reader never races with the writer. A word holds 16, 8, 4 or 2 picks
// (entry indices of 4, 8, 16 or 32 bits, as few as the entries need).
//
// Ticket arithmetic is modulo 2^64 (block numbers modulo 2^(64-shift)):
// the counter may wrap, since only differences between tickets and the
// generator's block are turned into positions.
type ring struct {
	shift  uint32                   // log2 of the picks per block
	pack   uint32                   // log2 of the bits per pick: 2, 3, 4 or 5
	wshift uint32                   // log2 of the picks per word: 6 - pack
	mask   uint32                   // 1<<(1<<pack) - 1
	imask  uint64                   // ringSlots<<shift - 1: a ticket's pick among all slots'
	blocks uint64                   // mask of block numbers: ^uint64(0) >> shift
	slot   [ringSlots]atomic.Uint64 // the block each slot holds, or noBlock
	words  []atomic.Uint64          // the slots' picks, slot after slot

	mu sync.Mutex
	// gen is guarded by mu, except its fields w, maxW and m (the period),
	// which are never written after newRing.
	gen       generator
	nextBlock uint64 // guarded by mu: the first block not generated yet
	genPos    uint64 // guarded by mu: position in the period of nextBlock's first pick
}

// newRing returns a ring over reduced weights w (sum period) whose ticket
// 0 is position 0 of the period. Blocks hold a power of two between 32 and
// 1024 picks near 2n, slices max(n, block size) buckets; with scan, the
// generator is the scan generator (see useScan) and has no slices.
func newRing(w []uint32, maxW uint32, period uint64, scan bool) *ring {
	n := len(w)
	r := &ring{}
	switch {
	case n <= 1<<4:
		r.pack = 2
	case n <= 1<<8:
		r.pack = 3
	case n <= 1<<16:
		r.pack = 4
	default:
		r.pack = 5
	}
	r.mask = uint32(1<<(1<<r.pack) - 1)
	// A block is at least 256 bits (four words, 64 entry indices at most
	// 16 entries), so that a block's fixed costs (a lock try, its words'
	// and its slot's atomic stores) are spread over at least 32 picks.
	r.shift = 8 - r.pack
	for r.shift < 10 && 1<<r.shift < 2*n {
		r.shift++
	}
	if scan {
		r.gen.initScan(w, maxW, period)
	} else {
		r.gen.init(w, maxW, period, max(n, 1<<r.shift))
	}
	r.blocks = ^uint64(0) >> r.shift
	r.wshift, r.imask = 6-r.pack, ringSlots<<r.shift-1
	r.words = make([]atomic.Uint64, ringSlots<<(r.shift+r.pack-6))
	for i := range r.slot {
		r.slot[i].Store(noBlock)
	}
	return r
}

// slotWords returns the words of slot i.
func (r *ring) slotWords(i uint64) []atomic.Uint64 {
	k := r.shift + r.pack - 6 // log2 of the words per block
	return r.words[i<<k : (i+1)<<k]
}

// place makes ticket t0 stand at position pos of the period. The ring must
// not be in use yet.
func (r *ring) place(pos, t0 uint64) {
	r.nextBlock = t0 >> r.shift
	r.genPos = r.advance(pos, -int64(t0&(1<<r.shift-1)))
	r.gen.reset(r.genPos)
	for i := range r.slot {
		r.slot[i].Store(noBlock)
	}
}

// advance returns pos moved by d picks, modulo the period.
func (r *ring) advance(pos uint64, d int64) uint64 {
	if d >= 0 {
		return (pos + uint64(d)%r.gen.m) % r.gen.m
	}
	return (pos + r.gen.m - uint64(-d)%r.gen.m) % r.gen.m
}

// read returns the entry for ticket t from its slot, if the slot holds t's
// block throughout. It is small enough to be inlined into Pick.
func (r *ring) read(t uint64) (uint32, bool) {
	b := t >> r.shift
	sl := &r.slot[b&(ringSlots-1)]
	if sl.Load() != b {
		return 0, false
	}
	// Pick number i of all slots' picks, in word i >> wshift, at bit
	// (i << pack) % 64.
	i := t & r.imask
	v := r.words[i>>(r.wshift&63)].Load() >> (i << r.pack & 63)
	return uint32(v) & r.mask, sl.Load() == b
}

// ahead reports whether block a is at or after block b.
func (r *ring) ahead(a, b uint64) bool {
	return (a-b)&r.blocks <= r.blocks>>1
}

// prefetch generates ahead of block b if nobody else is generating.
func (r *ring) prefetch(b uint64) {
	if r.mu.TryLock() {
		r.generateThrough(b + ringSlots - 2)
		r.mu.Unlock()
	}
}

// slow returns the entry for ticket t when its block was not readable.
func (r *ring) slow(t uint64) uint32 {
	b := t >> r.shift
	r.mu.Lock()
	r.catchUp(b, ringSlots-2)
	if x, ok := r.read(t); ok { // nobody writes while mu is held
		r.mu.Unlock()
		return x
	}
	pos := r.positionOf(t)
	r.mu.Unlock()
	_, _, last := seek(r.gen.w, r.gen.maxW, pos+1, nil)
	return uint32(last)
}

// catchUp generates blocks through block b+more if block b is not
// generated yet; if b is far ahead (after a Skip), the generator is first
// repositioned at b, which costs a seek. r.mu must be held.
func (r *ring) catchUp(b, more uint64) {
	if !r.ahead(b, r.nextBlock) {
		return
	}
	if gap := (b - r.nextBlock) & r.blocks; gap > ringSlots+uint64(len(r.gen.w))>>r.shift {
		r.genPos = r.advance(r.genPos, int64(gap<<r.shift))
		r.nextBlock = b
		r.gen.reset(r.genPos)
	}
	r.generateThrough(b + more)
}

// generateThrough generates blocks up to and including block target.
// r.mu must be held.
func (r *ring) generateThrough(target uint64) {
	target &= r.blocks
	for r.ahead(target, r.nextBlock) {
		b := r.nextBlock
		sl := &r.slot[b%ringSlots]
		sl.Store(noBlock)
		r.gen.fill(r.slotWords(b%ringSlots), uint(r.pack))
		sl.Store(b)
		r.nextBlock = (b + 1) & r.blocks
		if m := r.gen.m; m > 1<<r.shift { // no division in the common case
			if r.genPos += 1 << r.shift; r.genPos >= m {
				r.genPos -= m
			}
		} else {
			r.genPos = r.advance(r.genPos, 1<<r.shift)
		}
	}
}

// positionOf returns the position in the period of ticket t. r.mu must be
// held.
func (r *ring) positionOf(t uint64) uint64 {
	return r.advance(r.genPos, int64(t-r.nextBlock<<r.shift))
}
