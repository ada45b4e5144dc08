package peakewma

import (
	"errors"
	"math/bits"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// endpointData is what peak_ewma_experimental keeps per endpoint. It lives
// as long as the endpoint's SubConn, across every picker built meanwhile,
// so that requests picked from one picker are counted and measured by the
// next. Pickers read it concurrently; every mutable field is atomic.
//
// A pick and its Done cost four atomic read-modify-writes in all: the
// picker's random number, taking a slot (which counts the request),
// giving it back, and updating the estimate.
type endpointData struct {
	// state is the round-trip estimate and its update tick (see pack).
	state atomic.Uint64
	// held has bit i set while a pick holds slot i: its population count
	// is the number of measured requests in flight.
	held atomic.Uint64
	// overflow counts the requests in flight that found every slot held:
	// counted, not measured; never below zero.
	overflow atomic.Int64
	// busySince is, to its tick, the meter time of the last pick that
	// found every slot free or of the last release without a sample
	// (see markBusy and the stall bound at cost). The last completion's
	// time is the state's tick, so a Done with a sample writes no field
	// beyond held and the state.
	busySince atomic.Int64

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
		d.markBusy(d.m.now())
	}
	d.state.Store(pack(est, tick(now)))
}

// markBusy records meter time now in busySince: the time of a pick that
// finds every slot free, or of a release without a sample. cost knows
// busySince only to its tick, so a call in the tick busySince holds
// leaves it: a load instead of a store (on amd64 an atomic store is a
// locked instruction, as costly as a read-modify-write) in every pick
// that finds an endpoint idle.
func (d *endpointData) markBusy(now int64) {
	if d.busySince.Load()>>tickBits != now>>tickBits {
		d.busySince.Store(now)
	}
}

// pending returns the endpoint's requests in flight.
func (d *endpointData) pending() int64 {
	return int64(bits.OnesCount64(d.held.Load())) + max(d.overflow.Load(), 0)
}

// acquire takes a free slot for a request picked at now, which counts the
// request, and returns its Done; when every slot is held it counts the
// request in overflow and returns the unsampled Done.
func (d *endpointData) acquire(now int64) func(lb.DoneInfo) {
	for {
		h := d.held.Load()
		if h == ^uint64(0) {
			d.overflow.Add(1)
			return d.unsampled
		}
		i := bits.TrailingZeros64(^h)
		c := d.chunks[i/chunkSize].Load()
		if c == nil {
			c = d.grow(i / chunkSize)
		}
		if h == 0 {
			// Before the slot is taken, so that no cost reads this
			// request in flight with an earlier busySince.
			d.markBusy(now)
		}
		if d.held.CompareAndSwap(h, h|1<<i) {
			s := &c.slots[i%chunkSize]
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
// down) and adds the request's round trip to the estimate, with the
// failure penalty if it failed and not at all if it was never sent. A
// second Done of the same pick does nothing, unless another pick holds the
// slot by then (a caller's bug: it then ends that pick's measurement
// early).
func (s *slot) finish(di lb.DoneInfo) {
	d := s.d
	now := d.m.now()
	start := s.start
	if d.held.And(^s.bit)&s.bit == 0 {
		return
	}
	if di.Err != nil && errors.Is(di.Err, lb.ErrRequestNotSent) {
		// No sample, so the state's tick does not move: the stall
		// bound's witness moves here instead (see cost).
		d.markBusy(now)
		return
	}
	rtt := float64(now - start)
	if di.Err != nil {
		rtt += float64(d.m.penalty.Load())
	}
	d.observe(rtt, now)
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
// The stall is now - T, T the end of the later of two ticks: busySince's
// and the state's (the last completion, or the endpoint's creation). It
// is a lower bound of the age of the oldest request in flight, read in
// O(1) without a look at the slots: while requests are in flight, one of
// them was picked at or before T. That holds after every event:
//
//   - a pick that finds every slot free stores its own time in busySince
//     before it takes a slot, and its request is in flight from then on;
//   - a pick that finds a slot held adds a request and removes none;
//   - a completion with a sample moves the state's tick to its time, and
//     every request still in flight was picked before it;
//   - a release without a sample (not sent, or beyond the slots) stores
//     its time in busySince, for the same reason;
//   - a release of the last request in flight ends the period: the bound
//     is not read at 0 in flight, and the next pick starts a new one.
//
// Both times are known to their tick, and T is rounded up to its end, so
// rounding only lowers the bound. Under concurrency the clock reads and
// the atomic operations may interleave: the bound then exceeds the
// oldest age by at most the time between a pick's or a Done's clock read
// and its operation on held.
func (d *endpointData) cost(now int64, dec *decay) (float64, int64) {
	st := d.state.Load()
	// decayed(st, tick(now), dec), written out: the pick calls cost
	// twice, and decayed does not inline.
	est, at := estimateOf(st)
	el := int32(tick(now) - at)
	if el > 0 {
		est *= dec.weight(el)
	}
	p := d.pending()
	if p > 0 {
		since := (max(d.busySince.Load()>>tickBits, now>>tickBits-int64(el)) + 1) << tickBits
		if stall := float64(now - since); stall > est {
			est = stall
		}
	}
	return est * float64(p+1), p
}
