package edf

import (
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"
)

// Carry-over: what NewFrom needs from the previous scheduler, in O(n + m)
// for n new and m previous entries (plus hashing the items).

// linearCarry bounds the work of matching items by linear search: below
// it (n*m comparisons) NewFrom builds no map.
const linearCarry = 256

// Whether a scheduler's items are known to be pairwise distinct
// (Scheduler.distinct). NewFrom learns it for prev when it hashes prev's
// items, and knows it for the scheduler it builds; with distinct items, a
// list of the same items in the same order needs no hashing at all.
const (
	distinctUnknown uint32 = iota
	distinctYes
	distinctNo
)

// carried is the new entry list in the order NewFrom uses, and where its
// items were in the previous list.
type carried[T comparable] struct {
	entries []Entry[T]
	// from[k] is the first index in prev of the item of entries[k], or -1
	// for a new item; nil if entries has prev's items, distinct, in prev's
	// order (from[k] = k).
	from     []int32
	prev     []T
	index    map[T]int32 // first index of each item of prev; nil: search prev
	distinct uint32      // distinctness of the items of entries
}

// fromOf returns from[k] (see carried).
func (c *carried[T]) fromOf(k int) int32 {
	if c.from == nil {
		return int32(k)
	}
	return c.from[k]
}

// first returns the first index in prev of prev[i]'s item.
func (c *carried[T]) first(i int) int32 {
	if c.from == nil {
		return int32(i)
	}
	if c.index != nil {
		return c.index[c.prev[i]]
	}
	x := c.prev[i]
	for j := range i {
		if c.prev[j] == x {
			return int32(j)
		}
	}
	return int32(i)
}

// carryOrder returns entries in the order NewFrom uses: items of prev in
// prev's order, then new items, each group in the order given.
// prevDistinct is prev's distinctness, which carryOrder sets if it learns
// it. Unless prev's items are known distinct and entries has them in the
// same order, it compares every item of prev and entries with ==, so an
// incomparable one is reported here and later comparisons cannot panic.
func carryOrder[T comparable](prev []T, prevDistinct *atomic.Uint32, entries []Entry[T]) (c carried[T], err error) {
	k := -1
	defer func() {
		if recover() == nil {
			return
		}
		if k < 0 {
			err = fmt.Errorf("edf: previous scheduler: %w", ErrIncomparableItem)
		} else {
			err = &EntryError{Index: k, Err: ErrIncomparableItem}
		}
	}()
	c.prev = prev
	if len(prev) == len(entries) && prevDistinct.Load() == distinctYes {
		same := true
		for k = range entries {
			if entries[k].Item != prev[k] {
				same = false
				break
			}
		}
		if same {
			c.entries, c.distinct = entries, distinctYes
			return c, nil
		}
		k = -1
	}
	c.from = make([]int32, len(entries))
	if len(prev)*len(entries) > linearCarry {
		c.index = make(map[T]int32, len(prev))
		for i := len(prev) - 1; i >= 0; i-- {
			c.index[prev[i]] = int32(i) // the first occurrence wins
		}
		learned := distinctNo
		if len(c.index) == len(prev) {
			learned = distinctYes
		}
		prevDistinct.CompareAndSwap(distinctUnknown, learned)
	} else {
		for i := range prev {
			_ = prev[i] == prev[i] // panics if not comparable
		}
		if len(prev)*len(prev) <= linearCarry && prevDistinct.Load() == distinctUnknown {
			learned := distinctYes
			for i := range prev {
				if slices.Contains(prev[:i], prev[i]) {
					learned = distinctNo
					break
				}
			}
			prevDistinct.CompareAndSwap(distinctUnknown, learned)
		}
	}
	sorted := true
	last := int32(-1)
	for k = range entries {
		x := entries[k].Item
		j, ok := int32(-1), false
		if c.index != nil {
			j, ok = c.index[x]
		} else {
			_ = x == x // panics if not comparable
			for i := range prev {
				if prev[i] == x {
					j, ok = int32(i), true
					break
				}
			}
		}
		if !ok {
			j = -1
		}
		c.from[k] = j
		key := j
		if !ok {
			key = int32(len(prev))
		}
		sorted = sorted && key >= last
		last = max(last, key)
	}
	k = -1
	c.distinct = c.distinctness(entries)
	if sorted {
		c.entries = entries
		return c, nil
	}
	c.entries, c.from = placeByKey(len(prev), entries, c.from)
	return c, nil
}

// distinctness tells whether the items of entries, matched to prev in
// c.from, are pairwise distinct: no two match the same item of prev, and
// the new ones differ from each other.
func (c *carried[T]) distinctness(entries []Entry[T]) uint32 {
	var fresh []T
	if n := len(c.from); n*n <= linearCarry {
		for a, j := range c.from {
			if j < 0 {
				fresh = append(fresh, entries[a].Item)
			} else if slices.Contains(c.from[:a], j) {
				return distinctNo
			}
		}
	} else {
		seen := make([]bool, len(c.prev))
		for k, j := range c.from {
			if j < 0 {
				fresh = append(fresh, entries[k].Item)
				continue
			}
			if seen[j] {
				return distinctNo
			}
			seen[j] = true
		}
	}
	if len(fresh)*len(fresh) <= linearCarry {
		for a := range fresh {
			for b := range a {
				if fresh[a] == fresh[b] {
					return distinctNo
				}
			}
		}
		return distinctYes
	}
	set := make(map[T]struct{}, len(fresh))
	for _, x := range fresh {
		set[x] = struct{}{}
	}
	if len(set) < len(fresh) {
		return distinctNo
	}
	return distinctYes
}

// placeByKey sorts entries stably by from (new items, -1, last) with a
// counting sort over the m+1 keys.
func placeByKey[T comparable](m int, entries []Entry[T], from []int32) ([]Entry[T], []int32) {
	key := func(j int32) int32 {
		if j < 0 {
			return int32(m)
		}
		return j
	}
	start := make([]int32, m+2)
	for _, j := range from {
		start[key(j)+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	out := make([]Entry[T], len(entries))
	outFrom := make([]int32, len(entries))
	for k, j := range from {
		at := start[key(j)]
		start[key(j)]++
		out[at], outFrom[at] = entries[k], j
	}
	return out, outFrom
}

// What phase records of each item of prev (by its first index in prev).
const (
	atEarly  uint8 = iota // not picked at V, less than halfway through its interval
	atLate                // not picked at V, at least halfway through its interval
	atPicked              // picked at exactly V
)

// phase returns the virtual time V = a/b in (0, 1] of the most recent pick
// of s (in periods) and sets at[j], for the first index j in s of each
// item, to atPicked if s picked the item at exactly V, else to atLate if
// it was at least halfway through its interval at V: V*w - c >= 1/2 for
// its weight w and its c points consumed (else atEarly). at has
// len(s.items) elements, all atEarly. See [NewFrom].
func (s *Scheduler[T]) phase(c *carried[T], at []uint8) (a, b uint64) {
	// Short lists stay on the stack.
	var cntBuf [32]uint64
	n := len(s.items)
	cnt := cntBuf[:min(n, len(cntBuf))]
	if n > len(cntBuf) {
		cnt = make([]uint64, n)
	}
	a, b = 1, 1
	if pos := s.counts(cnt); pos == 0 {
		// V = 1 (end of a period): every entry was picked there.
		for i, w := range s.weights {
			cnt[i] = uint64(w)
		}
	} else {
		// The most recent pick is the largest point c_i/w_i consumed.
		a, b = 0, 1
		for i, x := range cnt {
			if x*b > a*uint64(s.weights[i]) {
				a, b = x, uint64(s.weights[i])
			}
		}
	}
	// With distinct items, item i's first index is i: no lookup.
	distinct := c.from == nil || s.distinct.Load() == distinctYes
	for i, x := range cnt {
		// d = a*w - x*b is 0 if picked at V, else in (0, b]: the next
		// point is at or after V. No overflow: a, b, w, x < 2^32.
		// Computed without branches, as late is unpredictable.
		d := a*uint64(s.weights[i]) - x*b
		_, early := bits.Sub64(2*d, b, 0) // 2d < b (also when picked: d = 0)
		picked := 1 - (d|-d)>>63
		st := uint8(1 - early + 2*picked) // atEarly, atLate or atPicked
		if distinct {
			at[i] = st
		} else {
			j := c.first(i)
			at[j] = max(at[j], st)
		}
	}
	return a, b
}

// tieOrder is where NewFrom places each entry of the carried order around
// the carried point V = a/b, with the new weights' gcd g (see rotate).
// Entry k is of one kind, in new order: 0 at or before p0, not moved;
// 1 moved up to just after them, passed at V; 2 moved after p, its point
// at V ahead; 3 after p0, not moved; 4 moved to the end.
type tieOrder struct {
	at    []uint8 // see phase
	from  []int32 // carried.from
	c     uint64  // a weight x has a point at V iff x*c <= c-1 (see onGrid)
	p0    int     // the last entry, in carried order, picked at V with a point there
	start [5]int  // new index of the next entry of each kind
	moves bool    // some entry moves
	// If at most len(fewK) entries move (nFew >= 0): their indices in
	// carried order, increasing, and their kinds. nFew is -1 otherwise.
	fewK    [8]int32
	fewKind [8]uint8
	nFew    int
}

// newTieOrder returns the tie order for V = a/b and gcd g. A weight x
// (times g) has a point at V iff a*(x/g)/b is an integer, that is iff x is
// a multiple of d = b/gcd(a, b)*g, tested with one multiplication
// (Lemire's divisibility test for 32-bit operands: x*c <= c-1 modulo 2^64
// with c = ceil(2^64/d); c = 1 when d >= 2^32, which no weight passes).
func newTieOrder(at []uint8, from []int32, a, b uint64, g uint32) tieOrder {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	d := b / x * uint64(g) // b < 2^32 and g < 2^32: no overflow
	o := tieOrder{at: at, from: from, p0: -1, c: 1}
	if d < 1<<32 {
		o.c = ^uint64(0)/d + 1 // 0 for d = 1: every weight passes
	}
	return o
}

// onGrid returns 1 if weight x has a point at V, else 0, without a branch.
func (o *tieOrder) onGrid(x uint32) uint64 {
	_, borrow := bits.Sub64(o.c-1, uint64(x)*o.c, 0)
	return 1 - borrow
}

// state returns what phase recorded of the entry carried from index j of
// prev; a new entry (j < 0) counts as late: its point at V is ahead.
func (o *tieOrder) state(j int32) uint8 {
	if j < 0 {
		return atLate
	}
	return o.at[j]
}

// kindOf returns the kind of entry k in carried order (see tieOrder),
// given its state and whether it has a point at V.
func (o *tieOrder) kindOf(k int, st uint8, on bool) int {
	switch {
	case st == atPicked:
		if on {
			return 0
		}
		return 4
	case k > o.p0:
		if on && st == atEarly {
			return 1
		}
		return 3
	case on && st == atLate:
		return 2
	}
	return 0
}

// dest returns the new index of entry k, of weight x, and counts it; for
// use in carried order, once per entry, when o.moves.
func (o *tieOrder) dest(k int, x uint32) int {
	j := int32(k)
	if o.from != nil {
		j = o.from[k]
	}
	kind := o.kindOf(k, o.state(j), o.onGrid(x) == 1)
	i := o.start[kind]
	o.start[kind]++
	return i
}

// rotate returns the tie order around the carried point V = a/b, given at
// (see phase) and g, the gcd of the new weights, and p, the last index in
// the new order of an entry whose point at V is passed. The points at V
// passed are those of the entries picked at V, and of the entries not
// picked there that have a point at V on their new grid but were less
// than halfway through their old interval (their next pick is rounded to
// the nearer of V and V + 1/w); the other entries' points at V are
// ahead. The order moves, keeping relative order within each part:
//
//   - to the end, the entries picked at V whose new grid j/w (w the weight
//     over g) has no point at V: in ties after V the entries not picked
//     at V come first, so a group of equal weights that all change
//     continues its rotation instead of restarting at its first entry;
//   - to just after the last entry picked at V (p0), the entries after it
//     whose point at V is passed, and then those before it whose point at
//     V is ahead.
//
// A group of equal weights is either not picked at V, its members in the
// same state, or partly picked, the others having their old point at V
// ahead; so it is never split around p. With the same items and weights
// nothing moves. O(n), no allocation.
func (c *carried[T]) rotate(at []uint8, a, b uint64, g uint32) (tieOrder, int) {
	o := newTieOrder(at, c.from, a, b, g)
	// Counts so far of entries of kind 4, of entries not picked on the
	// grid that are early (kind 0 or 1) and late (kind 2 or 3), and their
	// values at p0. The first len(o.fewK) candidates to move (those
	// entries, tagged with their state, and the entries of kind 4, tagged
	// atPicked) are recorded as they come; nc counts them all.
	var rear, early, late, rearP, earlyP, lateP, nc uint64
	for k, e := range c.entries {
		j := int32(k)
		if c.from != nil {
			j = c.from[k]
		}
		on := o.onGrid(e.Weight)
		st := o.state(j)
		if st != atPicked { // atEarly or atLate, without branches on on
			late += on & uint64(st)
			early += on &^ uint64(st)
			if nc < uint64(len(o.fewK)) {
				o.fewK[nc], o.fewKind[nc] = int32(k), st
			}
			nc += on
			continue
		}
		if on == 1 {
			o.p0, rearP, earlyP, lateP = k, rear, early, late
			continue
		}
		if nc < uint64(len(o.fewK)) {
			o.fewK[nc], o.fewKind[nc] = int32(k), atPicked
		}
		nc++
		rear++
	}
	n := len(c.entries)
	head := o.p0 + 1 - int(rearP+lateP)
	up := int(early - earlyP)
	p := head + up - 1
	if rear == 0 && up == 0 && lateP == 0 {
		return o, p
	}
	o.moves = true
	o.start = [5]int{0, head, head + up, head + up + int(lateP), n - int(rear)}
	o.nFew = -1
	if nc <= uint64(len(o.fewK)) {
		// Keep the candidates that move, with their kinds.
		o.nFew = 0
		for i := range int(nc) {
			k, kind := o.fewK[i], o.fewKind[i]
			switch {
			case kind == atPicked:
				kind = 4
			case kind == atEarly && int(k) > o.p0:
				kind = 1
			case kind == atLate && int(k) <= o.p0:
				kind = 2
			default:
				continue // on the grid but not moved
			}
			o.fewK[o.nFew], o.fewKind[o.nFew] = k, kind
			o.nFew++
		}
	}
	return o, p
}

// counts sets cnt[i] to the number of picks of entry i in the current
// period and returns the position in the period (their sum), in
// O(n + chunk) for a table (from the chunk of the most recent pick, which
// it generates first if needed) and O(n + block) for a ring, seeking only
// when the ring's generator is far from the position.
func (s *Scheduler[T]) counts(cnt []uint64) uint64 {
	switch {
	case s.tab != nil:
		pos := s.next.Load() % s.period
		if pos == 0 || s.tab.counts(pos, cnt) {
			return pos
		}
		// Generate the chunk of the most recent pick, as that pick
		// would have (once: s keeps it), and read the counts from it.
		s.tab.slow(pos - 1)
		if s.tab.counts(pos, cnt) {
			return pos
		}
		return s.seekCounts(pos, cnt)
	case s.ring != nil:
		s.ring.mu.Lock()
		defer s.ring.mu.Unlock()
		if pos, ok := s.ring.counts(s.next.Load(), cnt); ok {
			return pos
		}
		pos := s.ring.positionOf(s.next.Load())
		return s.seekCounts(pos, cnt)
	case s.heap != nil:
		return s.seekCounts(s.position(), cnt)
	}
	return 0
}

// seekCounts sets cnt from position pos with seek.
func (s *Scheduler[T]) seekCounts(pos uint64, cnt []uint64) uint64 {
	if pos != 0 {
		seek(s.weights, s.maxW, pos, func(i int, n uint64) { cnt[i] = n })
	}
	return pos
}

// counts sets cnt[i] to the number of picks of entry i in the period of
// ticket t before t, and returns t's position, from the generator's state
// and the blocks between t and the generator. If the generator has not
// reached t yet it first generates through t's block (as the pick of t
// would), after repositioning it if t is far ahead. It reports false if
// the blocks between t and the generator are gone (t is stale). r.mu must
// be held.
func (r *ring) counts(t uint64, cnt []uint64) (uint64, bool) {
	r.catchUp(t>>r.shift, 0)
	behind := r.nextBlock<<r.shift - t
	if behind > uint64(ringSlots)<<r.shift {
		return 0, false
	}
	for b := t >> r.shift; b != r.nextBlock; b = (b + 1) & r.blocks {
		if r.slot[b%ringSlots].Load() != b {
			return 0, false
		}
	}
	// The generator has handed out these points since the start of the
	// period it was last restarted in, of which the tickets from t on.
	// Nobody writes the slots while mu is held.
	r.gen.handedOut(cnt)
	perWord := uint64(1) << (6 - r.pack)
	for d := uint64(0); d < behind; {
		tk := t + d
		i := (tk>>r.shift)%ringSlots<<r.shift | tk&(1<<r.shift-1)
		v := r.words[i/perWord].Load() >> (i % perWord << r.pack)
		for k := i % perWord; k < perWord && d < behind; k++ {
			cnt[uint32(v)&r.mask]--
			v >>= 1 << r.pack
			d++
		}
	}
	var total uint64
	for _, x := range cnt {
		total += x
	}
	periods := total / r.gen.m
	for i, x := range cnt {
		cnt[i] = x - periods*uint64(r.gen.w[i])
	}
	return total % r.gen.m, true
}
