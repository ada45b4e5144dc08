package peakewma

import (
	"errors"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// endpointData is what peak_ewma_experimental keeps per endpoint. It lives
// as long as the endpoint's SubConn, across every picker built meanwhile,
// so that requests picked from one picker are counted and measured by the
// next. Pickers read it concurrently; every mutable field is atomic.
//
// A pick that finds its endpoint idle and its Done cost four atomic
// read-modify-writes in all: the picker's random number, taking a slot
// (which counts the request), giving it back, and updating the estimate.
// A pick beside requests in flight adds its since's store, and a Done
// that leaves requests in flight a load per slot still held (see cost).
type endpointData struct {
	// state is the round-trip estimate and its update tick (see pack).
	state atomic.Uint64
	// held has bit i set while a pick holds slot i: its population count
	// is the number of measured requests in flight.
	held atomic.Uint64
	// overflow counts the requests in flight that found no slot they
	// could take (every slot held, or every one but slot 0): counted,
	// not measured; never below zero.
	overflow atomic.Int64
	// witness is, to its tick, the meter time at which the oldest
	// measured request in flight was picked: the stall bound's witness
	// (see cost). It only rises: a pick that takes slot 0 (the endpoint
	// was idle) raises it to its own time, a release to the oldest of the
	// slots still held, or to its own time when none is (see finish).
	witness atomic.Int64

	// sc, m and unsampled are set once, when the endpoint is created,
	// before any picker holds the record. unsampled is the Done of a pick
	// that found no free slot.
	sc        lb.SubConn
	m         *meter
	unsampled func(lb.DoneInfo)
	// chunks hold the slots, made as requests in flight reach a new
	// maximum: an idle endpoint has none.
	chunks [chunkCount]atomic.Pointer[chunk]
}

// A slot carries one request in flight from its Pick to its Done: the time
// it was picked, and a Done made once per slot so that Pick does not
// allocate. An endpoint has slotCount slots, one bit of held each, made
// chunkSize at a time; a pick beyond them is counted but not measured.
// Slot 0 is taken only by a pick that finds every slot free (the first
// of a busy period, whose time the witness holds); the others take the
// lowest free slot of 1 to slotCount-1.
const (
	slotCount  = 64
	chunkSize  = 16
	chunkCount = slotCount / chunkSize
)

// chunk is chunkSize slots, made together.
type chunk struct{ slots [chunkSize]slot }

// slot is one request's measurement.
type slot struct {
	// start is the meter time of the pick holding the slot: written by
	// that Pick after it set the slot's bit, read by its Done before it
	// clears the bit (the bit's atomic operations order them).
	start int64
	// since is the same time for the witness's recompute, which reads
	// the slots that other picks hold: stored by a pick before it sets
	// the slot's bit, so that a release that sees the bit set reads this
	// pick's time or a later one (see finish). Slot 0's is not used.
	since atomic.Int64
	// bit is the slot's bit of held; d its endpoint; done its Done.
	bit  uint64
	d    *endpointData
	done func(lb.DoneInfo)
}

// init prepares d for sc with the starting estimate est (ns) at meter time
// now.
func (d *endpointData) init(sc lb.SubConn, m *meter, est float64, now int64) {
	d.sc, d.m = sc, m
	d.unsampled = func(lb.DoneInfo) {
		if d.overflow.Add(-1) < 0 {
			d.overflow.Add(1)
		}
	}
	d.state.Store(pack(est, tick(now)))
}

// raise sets the witness to meter time t unless it already holds t's tick
// or a later one. cost knows the witness only to its tick, so a pick that
// finds the endpoint idle in the tick the witness holds only loads it (on
// amd64 an atomic store is a locked instruction, as costly as a
// read-modify-write). A compare-and-swap rather than a store, so that the
// witness never falls: a release that recomputed it from slots since
// given back cannot overwrite a later release's witness (see cost).
func (d *endpointData) raise(t int64) {
	for {
		w := d.witness.Load()
		if t>>tickBits <= w>>tickBits || d.witness.CompareAndSwap(w, t) {
			return
		}
	}
}

// pending returns the endpoint's requests in flight.
func (d *endpointData) pending() int64 {
	return int64(bits.OnesCount64(d.held.Load())) + max(d.overflow.Load(), 0)
}

// acquire takes a free slot for a request picked at now, which counts the
// request, and returns its Done; when no slot is free (slot 0 aside,
// unless every slot is) it counts the request in overflow and returns the
// unsampled Done. A pick that finds
// every slot free takes slot 0 and raises the witness to now before it
// sets the bit; any other takes the lowest free slot above 0 and stores
// now in its since before it sets the bit (so a release that sees the bit
// reads its time), and leaves the witness: its request is the youngest.
func (d *endpointData) acquire(now int64) func(lb.DoneInfo) {
	for {
		h := d.held.Load()
		i := 0
		if h != 0 {
			if h|1 == ^uint64(0) {
				d.overflow.Add(1)
				return d.unsampled
			}
			i = bits.TrailingZeros64(^(h | 1))
		}
		c := d.chunks[i/chunkSize].Load()
		if c == nil {
			c = d.grow(i / chunkSize)
		}
		s := &c.slots[i%chunkSize]
		if h == 0 {
			d.raise(now)
		} else {
			s.since.Store(now)
		}
		if d.held.CompareAndSwap(h, h|1<<i) {
			s.start = now
			return s.done
		}
	}
}

// grow makes chunk k and returns it, or the chunk another pick made first.
// It allocates: only when the endpoint's requests in flight reach a new
// maximum, at most chunkCount times in its life.
func (d *endpointData) grow(k int) *chunk {
	c := new(chunk)
	for i := range c.slots {
		s := &c.slots[i]
		s.bit = 1 << (k*chunkSize + i)
		s.d = d
		s.done = func(di lb.DoneInfo) { s.finish(di) }
	}
	if d.chunks[k].CompareAndSwap(nil, c) {
		return c
	}
	return d.chunks[k].Load()
}

// finish is a slot's Done: it frees the slot (which counts the request
// down), brings the witness up to the requests still in flight, and adds
// the request's round trip to the estimate, with the failure penalty if
// it failed and not at all if it was never sent. A second Done of the
// same pick does nothing, unless another pick holds the slot by then (a
// caller's bug: it then ends that pick's measurement early).
//
// The witness (see cost): with slot 0 still held, the request that
// started the busy period is in flight and the witness stays; with no
// slot held, it rises to now (requests beyond the slots may still be in
// flight, all picked before now); otherwise it rises to the earliest
// since of the slots held (oldestSince).
func (s *slot) finish(di lb.DoneInfo) {
	d := s.d
	now := d.m.now()
	start := s.start
	h := d.held.And(^s.bit)
	if h&s.bit == 0 {
		return
	}
	if h &^= s.bit; h == 0 {
		d.raise(now)
	} else if h&1 == 0 {
		d.raise(d.oldestSince(h))
	}
	if di.Err != nil && errors.Is(di.Err, lb.ErrRequestNotSent) {
		return
	}
	rtt := float64(now - start)
	if di.Err != nil {
		rtt += float64(d.m.penalty.Load())
	}
	d.observe(rtt, now)
}

// oldestSince returns the earliest since of the slots whose bits held
// (not 0) has set: one load of a chunk and one of a since per slot, so
// O(requests in flight) and nothing for a slot not held.
func (d *endpointData) oldestSince(held uint64) int64 {
	oldest := int64(math.MaxInt64)
	for ; held != 0; held &= held - 1 {
		i := bits.TrailingZeros64(held)
		oldest = min(oldest, d.chunks[i/chunkSize].Load().slots[i%chunkSize].since.Load())
	}
	return oldest
}

// observe adds a sample of rtt ns taken at meter time now (tick t) to the
// estimate: with w = exp(-Δ/τ), Δ the ticks since the last update and
// est·w the decayed estimate, a sample above est·w replaces the estimate
// (the peak), and any other gives est·w + rtt·(1-w). The update time is
// the later of t and the last update's (a Done that read the clock before
// another updated the estimate sees no elapsed time).
func (d *endpointData) observe(rtt float64, now int64) {
	t := tick(now)
	dec := d.m.decay.Load()
	for {
		// Written out rather than in a helper of the state word's: a
		// call that does not inline costs Done about a nanosecond.
		st := d.state.Load()
		est, at := estimateOf(st)
		if el := int32(t - at); el > 0 {
			w := dec.weight(el)
			if est *= w; rtt > est {
				est = rtt
			} else {
				est += rtt * (1 - w)
			}
			at = t
		} else if rtt > est {
			est = rtt
		}
		if d.state.CompareAndSwap(st, pack(est, at)) {
			return
		}
	}
}

// cost returns the endpoint's cost at meter time now, and its requests in
// flight: the decayed estimate, raised to the stall when that is larger,
// times (requests in flight + 1).
//
// # The stall bound
//
// While requests are in flight, the stall is the age of the oldest of
// them, counted from the end of its pick's tick: now - T, T the end of
// the witness's tick. The pick reads it in one load; the upkeep is in the
// releases, and costs them one load per slot still held, nothing when the
// endpoint becomes idle. Serially the witness holds, to its tick, the pick
// time of the oldest measured request in flight, after every event:
//
//   - a pick that finds every slot free raises it to its own time before
//     it takes slot 0: its request starts the busy period, and slot 0
//     stays its own while it is in flight (no other pick takes slot 0);
//   - any other pick adds a request younger than those in flight, and
//     leaves it;
//   - a release that leaves slot 0 held leaves it: the request that
//     started the busy period is still the oldest;
//   - a release that leaves other slots held raises it to the earliest
//     since of those slots: the oldest request still measured;
//   - a release that leaves no slot held raises it to its own time.
//
// Each value is at least the one it replaces (the oldest of a set that
// loses members and gains younger ones only grows), so raising is setting.
// Requests beyond the slots are not measured: one of them may be older
// than every measured request, but each was picked while every slot was
// held, so before the release that left none held. The stall is therefore
// exact to the tick while every request in flight holds a slot, and a
// lower bound of the oldest request's age otherwise (at 0 in flight it is
// not read).
//
// Under concurrency no lock orders the clock reads and the atomic
// operations; each race errs by a bounded amount:
//
//   - a pick reads the clock before it raises the witness or stores its
//     since, and a release before its And: a delay in between can leave a
//     time early or late by that delay (the O(1) rule's bound before);
//   - two picks that saw slot i free both store slot i's since and one
//     sets the bit: the since is either's time, apart by at most the
//     loser's delay between its clock read and its store;
//   - a release reads held (its And), then each slot's since: a slot given
//     back and taken again meanwhile shows its new pick's time, later than
//     the oldest request's by at most the time between the release's And
//     and that load (the stall errs low, and the witness stays there until
//     the oldest request is that old or the busy period ends); a slot given
//     back and not yet taken again shows its last holder's time, too early,
//     but that holder's release comes later in held's order and recomputes
//     without it, and the witness only rises, so the later value stands
//     whichever is stored last;
//   - a since is stored before its bit is set, so a release that sees the
//     bit never reads a time from before that pick.
func (d *endpointData) cost(now int64, dec *decay) (float64, int64) {
	st := d.state.Load()
	// decayed(st, tick(now), dec), written out: the pick calls cost
	// twice, and decayed does not inline.
	est, at := estimateOf(st)
	if el := int32(tick(now) - at); el > 0 {
		est *= dec.weight(el)
	}
	p := d.pending()
	if p > 0 {
		if stall := float64(d.stall(now)); stall > est {
			est = stall
		}
	}
	return est * float64(p+1), p
}

// stall returns the stall at meter time now (see cost): read while
// requests are in flight.
func (d *endpointData) stall(now int64) int64 {
	return now - (d.witness.Load()>>tickBits+1)<<tickBits
}
