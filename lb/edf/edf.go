package edf

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// Entry is one item to schedule and its weight.
type Entry[T comparable] struct {
	// Item is returned by [Scheduler.Pick]. Items need not be distinct;
	// [NewFrom] matches entries of the previous scheduler by item equality.
	Item T
	// Weight must be at least 1. An entry is picked Weight times in every
	// run of sum-of-weights consecutive picks.
	Weight uint32
}

// Errors returned by [New] and [NewFrom]. Errors about one entry are wrapped
// in an [*EntryError] naming the entry's index; use [errors.Is] to test the
// reason.
var (
	// ErrNoEntries is returned for an empty entry list.
	ErrNoEntries = errors.New("edf: no entries")
	// ErrTooManyEntries is returned for more than [MaxEntries] entries.
	ErrTooManyEntries = errors.New("edf: too many entries")
	// ErrZeroWeight is the reason for an entry whose Weight is 0.
	ErrZeroWeight = errors.New("weight is 0")
	// ErrIncomparableItem is the reason for an item whose dynamic type
	// cannot be compared with == (only possible when T is an interface
	// type). Only [NewFrom] compares items.
	ErrIncomparableItem = errors.New("item is not comparable")
)

// MaxEntries is the largest number of entries a [Scheduler] accepts.
const MaxEntries = 1<<31 - 1

// EntryError reports an invalid entry.
type EntryError struct {
	Index int   // index of the entry in the list given to New or NewFrom
	Err   error // the reason, e.g. ErrZeroWeight
}

// Error returns "edf: entry <index>: <reason>".
func (e *EntryError) Error() string { return fmt.Sprintf("edf: entry %d: %v", e.Index, e.Err) }

// Unwrap returns the reason.
func (e *EntryError) Unwrap() error { return e.Err }

// Option configures [New] and [NewFrom].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type mode uint8

const (
	modeAuto    mode = iota // a table if the period is small enough, else a ring
	modeTable               // a table if the period is below 2^24 (tests only)
	modeHeap                // always a heap (tests only)
	modeRing                // always a ring of generated blocks (tests only)
	modeBuckets             // a ring whose generator is never the scan one (tests only)
	modeLazy                // a table filled on demand if the period is below 2^24, else auto (tests only)
)

type config struct {
	randomStart bool
	rnd         *rand.Rand
	mode        mode
	origin      uint64 // the ticket counter's first value (tests only)
}

// WithRandomStart makes [New] start the schedule at a position drawn
// uniformly from the [Scheduler.Period] positions of its period, so that the
// first pick returns entry i with probability Weight_i / sum of weights. The
// order of picks from there on is unchanged. r supplies the randomness; if r
// is nil the global generator of math/rand/v2 is used. r is used only during
// the call, never by the returned scheduler.
//
// If this option is not supplied, the schedule starts at the beginning of
// its period, as the EDF specification says: every deadline is 1/weight, so
// the first pick is the heaviest entry (the first one among equals).
// [NewFrom] with a non-empty previous scheduler ignores this option: the
// position is carried over instead.
func WithRandomStart(r *rand.Rand) Option {
	return optionFunc(func(c *config) { c.randomStart, c.rnd = true, r })
}

// withMode forces the implementation; tests use it to cover all of them.
func withMode(m mode) Option { return optionFunc(func(c *config) { c.mode = m }) }

// withOrigin starts the ring's ticket counter at t0 instead of 0, so tests
// can cross the counter's wrap at 2^64.
func withOrigin(t0 uint64) Option { return optionFunc(func(c *config) { c.origin = t0 }) }

// Scheduler is an earliest-deadline-first scheduler over a fixed list of
// weighted entries. It is created by [New] or [NewFrom] and is immutable
// except for its position in the schedule.
//
// Concurrency: [Scheduler.Pick] and [Scheduler.Skip] may be called by any
// number of goroutines at once, together with every other method, and never
// block for long (see below). Concurrent calls are linearizable: they behave
// as if they ran one at a time in some order consistent with real time, so
// every run of [Scheduler.Period] consecutive picks (in that order) returns
// each entry exactly its reduced weight times, however many goroutines took
// part. [NewFrom] reads prev's position once; picks made on prev afterwards
// are not carried over.
//
// Pick takes a ticket from an atomic counter and reads its entry from a
// table of the whole period (when the period, the sum of weights divided by
// their greatest common divisor, fits 192 bytes per entry at bits.Len(n-1)
// bits a pick: see table) or from a ring of blocks of the schedule
// generated exactly, in order, ahead of the picks (see ring). It never
// allocates; it takes a lock only when picks outrun the generator, and
// then for the generation of one block (for a table filled on demand,
// until the first pass through the period has filled it, of one or two
// chunks, after a seek when a Skip jumped away from the generator). Memory
// is O(n), independent of the weights.
//
// The zero Scheduler has no entries: Pick returns the zero T and Skip does
// nothing.
type Scheduler[T comparable] struct {
	// Set at construction and never written again.
	items   []T
	weights []uint32 // weights divided by gcd
	gcd     uint32
	maxW    uint32     // largest reduced weight
	period  uint64     // sum of reduced weights
	last    uint64     // period-1 when a table is used: positions below it need no wrap
	tab     *table     // nil unless the table implementation is used
	ring    *ring      // nil unless the ring implementation is used
	heap    *heapState // nil unless the heap implementation is used (tests only)
	// Whether the items are pairwise distinct (distinctYes etc.): set by
	// NewFrom, or learned by a later NewFrom from this one (see carryOrder).
	distinct atomic.Uint32

	// The position, kept away from the read-only fields above so that the
	// cache line every Pick writes is not the one every Pick reads.
	_    [64]byte
	next atomic.Uint64 // table: count of picks and skips, reduced mod period now and then; ring: the ticket counter
	_    [56]byte
}

// New returns a scheduler for entries, ordered by the entries' index in the
// slice (the EDF order offset). It returns an [*EntryError] wrapping
// [ErrZeroWeight] for a weight of 0, [ErrNoEntries] for an empty list and
// [ErrTooManyEntries] for more than [MaxEntries] entries; it never panics.
// The cost is O(n) for n entries (O(n + period) when the period is at
// most 4n, which the table generates whole at build).
func New[T comparable](entries []Entry[T], opts ...Option) (*Scheduler[T], error) {
	return NewFrom(nil, entries, opts...)
}

// NewFrom returns a scheduler for entries that continues the schedule of
// prev: entries whose items were in prev keep their place, changed weights
// apply from the next pick, and new entries join at the current point. If
// prev is nil or has no entries, NewFrom is [New]. prev is not modified and
// may still be used, but picks made on it after NewFrom read its position
// are not seen by the new scheduler. Items are matched with ==.
//
// Order. Entries whose item was in prev keep prev's order among themselves
// (by the item's first occurrence in prev), whatever their order in entries;
// new items follow, in the order given; then some entries move around the
// carried point, as described below, keeping their relative order. This
// order is the new scheduler's tie-break order (its order offsets), so
// reordering the list does not reorder the schedule.
//
// Position. Measure virtual time in periods: the deadlines of entry i lie on
// the grid j/w_i, with w_i its weight divided by the gcd of all weights. Let
// V in (0, 1] be the deadline of prev's most recent pick, taken modulo the
// period (V = 1 if prev has not picked yet or is exactly at the end of a
// period), and A the items prev picked at exactly V. An entry has a point
// at V if V lies on its new grid. The new scheduler starts after every
// grid point below V and after the points at V of the entries in A and of
// the entries not in A that were less than halfway through their interval
// in prev at V; the points at V of the other entries, new ones included,
// are still ahead. So each entry's next deadline is its first grid point
// after V on its new grid, or V itself for an entry not in A that has a
// point there and was at least halfway to its next deadline in prev (a
// changed entry's next pick is rounded to the nearer of the two).
//
// For this to be a position in the new schedule, whose order breaks ties,
// some entries move in the order, keeping their relative order: the
// entries in A with no point at V go to the end, so that in ties after V
// the entries prev had not picked at V come before those it had (a group
// of equal weights that all change at each rebuild then continues its
// rotation rather than restarting at its first entry, which starved its
// last entries when fewer picks than its size came between rebuilds); and
// the entries whose point at V is passed come before those whose point
// there is ahead (they move to just after the last entry in A that has a
// point at V).
//
// So if entries has the same items and weights as prev, in any order,
// nothing moves and the new scheduler continues exactly where prev
// stands; an entry whose weight changed gets its next pick within 1/w' of
// V; a new entry is treated as if it had always been there, its point at
// V (if any) ahead; and entries that stay in the list with weights equal
// to each other at every rebuild are picked in one rotation, as without
// rebuilds: in any run of picks their counts differ by at most one.
//
// Beyond that rounding, how far a changed entry was through its interval
// is not carried (its deadlines stay on the grid j/w'): each change of an
// entry's weight can move its count by up to one pick from its share, and
// when weights keep changing these errors need not cancel. Every rebuild
// still gives each entry its next pick within 1/w' of V.
//
// Cost: O(n + m) for n entries and m entries in prev, plus building as for
// New: each item is hashed once (or, when n*m is small, compared), and
// prev's position is read from its table, or from its generator and the
// blocks it has generated ahead (O(n + block)); only after a long
// [Scheduler.Skip] on prev does finding the position take a seek,
// O(m log maxweight), which prev then keeps for later calls. NewFrom returns the same errors as New, and an error wrapping
// [ErrIncomparableItem] if an item cannot be compared (only possible if T is
// an interface type); for an item in entries it is an [*EntryError].
func NewFrom[T comparable](prev *Scheduler[T], entries []Entry[T], opts ...Option) (*Scheduler[T], error) {
	var cfg config
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("edf: option %d of %d is nil", i+1, len(opts))
		}
		o.apply(&cfg)
	}
	if err := validate(entries); err != nil {
		return nil, err
	}
	if prev == nil || len(prev.items) == 0 {
		s := build(entries, weightsGCD(entries), cfg.mode, nil)
		var pos uint64
		if cfg.randomStart && s.period > 1 {
			if cfg.rnd != nil {
				pos = cfg.rnd.Uint64N(s.period)
			} else {
				pos = rand.Uint64N(s.period)
			}
		}
		if pos != 0 || cfg.origin != 0 {
			s.place(pos, cfg.origin)
		}
		return s, nil
	}
	c, err := carryOrder(prev.items, &prev.distinct, entries)
	if err != nil {
		return nil, err
	}
	var atBuf [32]uint8
	at := atBuf[:min(len(prev.items), len(atBuf))]
	if len(prev.items) > len(atBuf) {
		at = make([]uint8, len(prev.items))
	}
	a, b := prev.phase(&c, at)
	g := weightsGCD(c.entries)
	o, p := c.rotate(at, a, b, g)
	s := build(c.entries, g, cfg.mode, &o)
	s.distinct.Store(c.distinct)
	if s.ring != nil && cfg.origin == 0 {
		// The counts per entry are known here: no seek needed.
		pos := positionAt(s.weights, a, b, p, s.ring.gen.setConsumed) % s.period
		s.ring.genPos = pos
		s.ring.gen.restart()
		return s, nil
	}
	if t := s.tab; t != nil && t.missing > 0 && cfg.origin == 0 {
		// Position the generator too, as for a ring: no seek later.
		t.initGen()
		pos := positionAt(s.weights, a, b, p, t.setConsumed)
		if pos == s.period {
			pos = 0 // at the end of a period: the next one starts from 0
			for i := range t.w {
				t.setConsumed(i, 0)
			}
		}
		t.position(pos)
		s.next.Store(pos)
		return s, nil
	}
	pos := positionAt(s.weights, a, b, p, nil)
	if pos == s.period {
		pos = 0
	}
	s.place(pos, cfg.origin)
	return s, nil
}

// validate reports the first problem with entries.
func validate[T comparable](entries []Entry[T]) error {
	if len(entries) == 0 {
		return ErrNoEntries
	}
	if len(entries) > MaxEntries {
		return ErrTooManyEntries
	}
	for i, e := range entries {
		if e.Weight == 0 {
			return &EntryError{Index: i, Err: ErrZeroWeight}
		}
	}
	return nil
}

// weightsGCD returns the gcd of the weights of entries.
func weightsGCD[T comparable](entries []Entry[T]) uint32 {
	var g uint32
	for _, e := range entries {
		if g != 1 {
			g = gcd(g, e.Weight)
		}
	}
	return g
}

// build returns a scheduler for valid entries, whose weights have gcd g, at
// position 0, in the order o gives them (in their order if o is nil or
// moves nothing).
func build[T comparable](entries []Entry[T], g uint32, m mode, o *tieOrder) *Scheduler[T] {
	n := len(entries)
	s := &Scheduler[T]{
		items:   make([]T, n),
		weights: make([]uint32, n),
		gcd:     g,
	}
	switch {
	case o == nil || !o.moves:
		for i, e := range entries {
			s.put(i, e)
		}
	case o.nFew >= 0:
		// Only the few entries in o.fewK move: the others keep their
		// order, at or before p0 (kind 0) or after it (kind 3).
		k := 0
		put := func(kind int, e Entry[T]) {
			s.put(o.start[kind], e)
			o.start[kind]++
		}
		for f, m := range o.fewK[:o.nFew] {
			for ; k < int(m); k++ {
				put(3-3*b2i(k <= o.p0), entries[k])
			}
			put(int(o.fewKind[f]), entries[m])
			k++
		}
		for ; k < n; k++ {
			put(3-3*b2i(k <= o.p0), entries[k])
		}
	default:
		for k, e := range entries {
			s.put(o.dest(k, e.Weight), e)
		}
	}
	if n == 1 {
		return s // Pick returns the only item; no state at all
	}
	tab := useTable(n, s.period)
	eager := s.period <= tableLimit*uint64(n)
	switch m {
	case modeTable:
		tab = s.period < 1<<24
	case modeHeap:
		s.heap = newHeapState(s.weights, s.period)
		return s
	case modeRing, modeBuckets:
		tab = false
	case modeLazy:
		if s.period < 1<<24 {
			tab, eager = true, false
		}
	}
	switch {
	case tab:
		// The table is one period of what a ring's generator produces.
		s.tab = newTable(s.weights, s.maxW, s.period, eager)
		s.last = s.period - 1
	default:
		s.ring = newRing(s.weights, s.maxW, s.period, m != modeBuckets && useScan(n, s.maxW))
	}
	return s
}

// b2i returns 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// put sets entry i of a scheduler being built to e.
func (s *Scheduler[T]) put(i int, e Entry[T]) {
	s.items[i] = e.Item
	w := e.Weight / s.gcd
	s.weights[i] = w
	s.period += uint64(w)
	s.maxW = max(s.maxW, w)
}

// Pick returns the item of the entry with the earliest deadline, the lower
// index winning a tie, and advances that entry's deadline by 1/weight. It is
// safe for concurrent use, never allocates, and takes a lock only when
// picks outrun the schedule's generator (see [Scheduler]).
func (s *Scheduler[T]) Pick() T {
	if t := s.tab; t != nil {
		p := s.next.Add(1) - 1
		if p >= s.last {
			p = s.wrap(p)
		}
		if t.isReady(p >> (t.cshift & 63)) { // its chunk is generated
			return s.items[t.at(p)]
		}
		return s.items[t.slow(p)]
	}
	if r := s.ring; r != nil {
		t := s.next.Add(1) - 1
		if x, ok := r.read(t); ok {
			if t&(1<<(r.shift&63)-1) == 0 {
				r.prefetch(t >> (r.shift & 63))
			}
			return s.items[x]
		}
		return s.items[r.slow(t)]
	}
	return s.pickSlow()
}

// wrap maps a counter value p >= period-1 to its position in the period.
//
// The counter is kept below period*(1+number of in-flight calls) without a
// compare-and-swap loop: every call whose own add carries the counter across
// a multiple of the period subtracts one period afterwards. Each add is
// smaller than the period, so it crosses at most one multiple, and
// floor(counter/period) always equals the number of subtractions still
// owed. Subtracting a period does not change any position modulo the
// period, so picks stay exact; the fast path in Pick needs no division.
func (s *Scheduler[T]) wrap(p uint64) uint64 {
	w := s.period
	r := p
	if p >= w {
		r = p % w
	}
	if r == w-1 { // this pick's add carried the counter to a multiple of w
		s.next.Add(-w)
	}
	return r
}

func (s *Scheduler[T]) pickSlow() T {
	if s.heap != nil {
		return s.items[s.heap.pick()]
	}
	if len(s.items) == 1 {
		return s.items[0]
	}
	var zero T
	return zero
}

// Skip advances the schedule by n picks without returning them, as if Pick
// had been called n times. It costs O(1); the first pick after a skip past
// the blocks generated ahead repositions the generator in
// O(len log maxweight), independent of n (with a lazily filled table, the
// first pick past its filled part fills it up to that pick's position,
// O(len * period) once: at most 128*len^2 steps, len <= 16). It is safe
// for concurrent use with Pick; n may be any value, e.g. to move past 2^64
// picks in two calls.
func (s *Scheduler[T]) Skip(n uint64) {
	switch {
	case s.counted():
		k := n % s.period
		if k == 0 {
			return
		}
		after := s.next.Add(k)
		if before := after - k; after/s.period != before/s.period {
			s.next.Add(-s.period) // see wrap
		}
	case s.ring != nil:
		if k := n % s.period; k != 0 {
			s.next.Add(k) // the ring generates from the new ticket on (see ring)
		}
	case s.heap != nil:
		s.heap.skip(n, s.weights, s.maxW)
	}
}

// place moves a scheduler that nobody else uses yet to position pos; a
// ring's ticket counter starts at origin.
func (s *Scheduler[T]) place(pos, origin uint64) {
	switch {
	case s.counted():
		s.next.Store(pos)
	case s.ring != nil:
		s.ring.place(pos, origin)
		s.next.Store(origin)
	case s.heap != nil:
		s.heap.mu.Lock()
		s.heap.seek(pos, s.weights, s.maxW)
		s.heap.mu.Unlock()
	}
}

// position returns the number of picks made in the current period, in
// [0, period).
func (s *Scheduler[T]) position() uint64 {
	switch {
	case s.counted():
		return s.next.Load() % s.period
	case s.ring != nil:
		s.ring.mu.Lock()
		defer s.ring.mu.Unlock()
		return s.ring.positionOf(s.next.Load())
	case s.heap != nil:
		s.heap.mu.Lock()
		defer s.heap.mu.Unlock()
		return s.heap.pos
	}
	return 0
}

// counted reports whether the ticket counter is the position in the
// period (modulo the period, see wrap): a table or a lazy table is used.
func (s *Scheduler[T]) counted() bool {
	return s.tab != nil
}

// Len returns the number of entries.
func (s *Scheduler[T]) Len() int { return len(s.items) }

// Period returns the number of picks after which the schedule repeats: the
// sum of the weights divided by their greatest common divisor. In every run
// of Period consecutive picks, entry i is picked exactly Weight_i/gcd times.
func (s *Scheduler[T]) Period() uint64 { return s.period }

// String describes the scheduler for debugging, e.g.
// "edf(n=3 period=6 pos=2 table)[a:3 b:2 c:1]"; the list shows at most 16
// entries with their weights as given.
func (s *Scheduler[T]) String() string {
	impl := "single"
	switch {
	case s.tab != nil:
		impl = "table"
	case s.ring != nil:
		impl = "ring"
	case s.heap != nil:
		impl = "heap"
	case len(s.items) == 0:
		impl = "empty"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "edf(n=%d period=%d pos=%d %s)[", len(s.items), s.period, s.position(), impl)
	for i, it := range s.items {
		if i == 16 {
			sb.WriteString(" …")
			break
		}
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%v:%d", it, uint64(s.weights[i])*uint64(s.gcd))
	}
	sb.WriteByte(']')
	return sb.String()
}

func gcd(a, b uint32) uint32 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
