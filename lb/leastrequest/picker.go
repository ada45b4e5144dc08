package leastrequest

import (
	"math/bits"
	"math/rand/v2"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// picker is gRFC A48's picker: each Pick samples choices entries uniformly at
// random, with replacement, and returns the first sampled entry with the
// fewest outstanding requests, counting the request in it.
//
// # Random numbers
//
// The picker's numbers are wyrand's: the k-th (k >= 1) is
// mix(seed + k·weyl), seed drawn from the tree's random source when the
// picker was built. The
// sequence is cut into [cursorCount] segments of 2^60 numbers, one per
// cursor; a Pick claims choices consecutive numbers from one cursor with
// one atomic add, so no number is used twice, Pick takes no lock and never
// allocates.
//
// Picks that do not overlap claim from cursor 0, the sequence from the seed
// itself: serial picks are reproducible from the seed. A pick that finds
// that another claimed from cursor 0 between its load and its add marks the
// picker contended; while it is, picks claim from a cursor chosen by the
// runtime's per-thread random generator, so that picks on different cores
// mostly write different cache lines. The 4096th number claimed from
// a cursor (and every 4096th after it) ends contended mode: the next pick
// tries cursor 0 again.
type picker struct {
	// entries are the READY endpoints' data, owned by the balancer's
	// endpoint records and shared by every picker: the counters outlive
	// the picker.
	entries []*endpointData
	// weights, when not nil, are the entries' slow start weights (factor
	// times slowstart.Resolution, at least 1): an entry's load is then
	// (outstanding+1)/weight. Nil while no endpoint ramps.
	weights []uint64
	// draw, when not nil, draws entries in proportion to weights (see
	// pickWeighted). Nil while no endpoint ramps.
	draw    *slowstart.Sampler
	choices uint64
	// step is choices·weyl: what one claim adds to a cursor.
	step uint64
	// contended is set by a pick that lost a race for cursor 0 and
	// cleared as the type says; it only steers picks to cursors, so a
	// stale read costs time, never correctness.
	contended atomic.Bool
	// Every Pick writes one cursor: each cursor has a cache line of its
	// own, apart from the fields above, which every Pick reads.
	_       [64]byte
	cursors [cursorCount]cursor
}

// cursorCount is the number of cursors of a picker, a power of two: enough
// that goroutines on the cores of a large machine seldom share one, small
// enough that a picker stays about 1 KiB.
const cursorCount = 1 << cursorBits

// cursorBits is log2(cursorCount).
const cursorBits = 4

// cursor is one segment of a picker's sequence.
type cursor struct {
	// next is the Weyl state of the last number claimed from the segment
	// (start before the first claim).
	next atomic.Uint64
	// start is the state just before the segment's first number:
	// seed + i·2^60·weyl for cursor i.
	start uint64
	_     [48]byte
}

// newPicker returns a picker over entries (not empty) sampling choices
// entries per pick, with the sequence from seed.
func newPicker(entries []*endpointData, choices int, seed uint64) *picker {
	p := &picker{entries: entries, choices: uint64(choices), step: uint64(choices) * weyl}
	for i := range p.cursors {
		c := &p.cursors[i]
		c.start = seed + uint64(i)<<60*weyl
		c.next.Store(c.start)
	}
	return p
}

const (
	// weyl is wyrand's increment: the sequence's k-th state is
	// seed + k·weyl.
	weyl = 0xa0761d6478bd642f
	// wyMix is the constant wyrand multiplies a state by, xored with
	// itself.
	wyMix = 0xe7037ed1a0b428db
	// contendedPeriod (a power of two) is how many numbers a cursor hands
	// out between two ends of contended mode.
	contendedPeriod = 4096
)

// sample returns the entry that the number at Weyl state s samples:
// wyrand's output (the two halves of the 128-bit product s·(s^wyMix),
// xored) scaled to [0, len(entries)) by a 128-bit multiply (bias below
// len/2^64).
func (p *picker) sample(s uint64) int {
	hi, lo := bits.Mul64(s, s^wyMix)
	i, _ := bits.Mul64(hi^lo, uint64(len(p.entries)))
	return int(i)
}

// Pick returns the sampled READY SubConn with the fewest outstanding
// requests (the first sampled among equals) and counts the request against
// it until Done. It never fails.
//
// The numbers of a pick are the states s, s-weyl, …, s-(choices-1)·weyl,
// where s is the cursor's state after the claim.
func (p *picker) Pick(lb.PickInfo) (lb.PickResult, error) {
	var s uint64
	if p.contended.Load() {
		s = p.claimContended()
	} else {
		// Predict the claim from a plain load and check it with the
		// add: when no other pick came between, sampling does not wait
		// for the atomic add to complete.
		home := &p.cursors[0].next
		s = home.Load() + p.step
		if got := home.Add(p.step); got != s {
			s = p.lostRace(got)
		}
	}
	if p.weights != nil {
		return p.pickWeighted(s)
	}
	best := p.entries[p.sample(s)]
	least := best.active.Load()
	for i := uint64(1); i < p.choices; i++ {
		s -= weyl
		e := p.entries[p.sample(s)]
		if n := e.active.Load(); n < least {
			best, least = e, n
		}
	}
	best.active.Add(1)
	return lb.PickResult{SubConn: best.sc, Done: best.done}, nil
}

// pickWeighted is Pick's choice while an endpoint ramps: it samples each
// entry in proportion to its weight (p.draw), with replacement, from the
// same numbers as Pick, and takes the first with the least
// (outstanding+1)/weight, compared by cross-multiplying (outstanding
// counts and weights are far below 2^32).
func (p *picker) pickWeighted(s uint64) (lb.PickResult, error) {
	bi := p.drawIndex(s)
	best, bw := p.entries[bi], p.weights[bi]
	load := uint64(max(best.active.Load(), 0)) + 1
	for i := uint64(1); i < p.choices; i++ {
		s -= weyl
		j := p.drawIndex(s)
		e, w := p.entries[j], p.weights[j]
		n := uint64(max(e.active.Load(), 0)) + 1
		if n*bw < load*w {
			best, bw, load = e, w, n
		}
	}
	best.active.Add(1)
	return lb.PickResult{SubConn: best.sc, Done: best.done}, nil
}

// drawIndex returns the entry that the number at Weyl state s draws in
// proportion to the weights.
func (p *picker) drawIndex(s uint64) int {
	hi, lo := bits.Mul64(s, s^wyMix)
	return p.draw.Index(hi ^ lo)
}

// lostRace marks the picker contended and returns got, the claim a pick
// made from cursor 0 after another pick changed it. It is a call, not an
// assignment, so that the compiler cannot turn Pick's prediction into a
// conditional move that waits for the add.
//
//go:noinline
func (p *picker) lostRace(got uint64) uint64 {
	p.contended.Store(true)
	return got
}

// claimContended claims a pick's numbers from a cursor chosen by the
// runtime's per-thread generator (no lock), and ends contended mode every
// contendedPeriod numbers of that cursor.
//
//go:noinline
func (p *picker) claimContended() uint64 {
	c := &p.cursors[rand.Uint64()>>(64-cursorBits)]
	got := c.next.Add(p.step)
	if (got-c.start)&(contendedPeriod-1) == 0 {
		p.contended.Store(false)
	}
	return got
}
