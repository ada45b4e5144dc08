package peakewma

import (
	"errors"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// endpointData is what peak_ewma_experimental keeps per endpoint. It lives
// as long as the endpoint's SubConn, across every picker built meanwhile,
// so that requests picked from one picker are counted and measured by the
// next. Pickers read it concurrently; every mutable field is atomic.
type endpointData struct {
	// state is the round-trip estimate and its update tick (see pack).
	state atomic.Uint64
	// pending counts the endpoint's requests in flight: incremented by
	// Pick, decremented by Done, never below zero.
	pending atomic.Int64
	// busySince is the meter time of the last pick that found the
	// endpoint idle. The last completed request's time is the state's
	// tick: while requests are in flight and none has completed since
	// the later of the two, the oldest of them is at least that old (see
	// cost). Done thus writes no field beyond the state and the count.
	busySince atomic.Int64
	// free is the free list of slots: a tag (bumped by every change, so
	// that a stale compare-and-swap fails) in the high 32 bits and the
	// index+1 of the first free slot (0: none) in the low 32 bits.
	free atomic.Uint64

	// sc, m and unsampled are set once, when the endpoint is created,
	// before any picker holds the record. unsampled is the Done of a pick
	// that found no slot: it counts the request down without a sample.
	sc        lb.SubConn
	m         *meter
	unsampled func(lb.DoneInfo)
	// chunks hold the slots, made as requests in flight reach a new
	// maximum: an idle endpoint has none.
	chunks [maxChunks]atomic.Pointer[chunk]
}

// A slot carries one request in flight from its Pick to its Done: the time
// it was picked, and a Done made once per slot so that Pick does not
// allocate. An endpoint has at most maxChunks·chunkSize slots; a pick
// beyond them is counted but not measured.
const (
	chunkSize = 16
	maxChunks = 16
)

// chunk is chunkSize slots, made together.
type chunk struct{ slots [chunkSize]slot }

// slot is one request's measurement.
type slot struct {
	// start is the meter time of the pick holding the slot: written by
	// that Pick after it took the slot from the free list, read by its
	// Done (which the caller calls after Pick returned).
	start int64
	// next is the free-list link: the index+1 of the next free slot.
	next atomic.Uint32
	// held is set while a pick holds the slot; Done clears it, so a
	// second Done of the same pick changes nothing.
	held atomic.Bool
	// index is the slot's index+1; d its endpoint; done its Done.
	index uint32
	d     *endpointData
	done  func(lb.DoneInfo)
}

// init prepares d for sc with the starting estimate est (ns) at meter time
// now.
func (d *endpointData) init(sc lb.SubConn, m *meter, est float64, now int64) {
	d.sc, d.m = sc, m
	d.unsampled = func(lb.DoneInfo) { d.release() }
	d.state.Store(pack(est, tick(now)))
}

// slot returns the slot of an index+1 that the free list named, whose
// chunk exists.
func (d *endpointData) slot(index uint32) *slot {
	i := index - 1
	return &d.chunks[i/chunkSize].Load().slots[i%chunkSize]
}

// acquire takes a free slot for a request picked at now and returns its
// Done, or the unsampled Done when every slot is held.
func (d *endpointData) acquire(now int64) func(lb.DoneInfo) {
	for {
		h := d.free.Load()
		if uint32(h) == 0 {
			s, retry := d.grow()
			if s != nil {
				s.start = now
				s.held.Store(true)
				return s.done
			}
			if !retry {
				return d.unsampled
			}
			continue
		}
		s := d.slot(uint32(h))
		if d.free.CompareAndSwap(h, (h>>32+1)<<32|uint64(s.next.Load())) {
			s.start = now
			s.held.Store(true)
			return s.done
		}
	}
}

// grow makes the first missing chunk, keeps its first slot for the caller
// and puts the others on the free list. It returns (nil, true) when another
// pick made that chunk first (the caller tries the free list again) and
// (nil, false) when every chunk exists. It allocates: only when the
// endpoint's requests in flight reach a new maximum, at most maxChunks
// times in its life.
func (d *endpointData) grow() (*slot, bool) {
	k := 0
	for k < maxChunks && d.chunks[k].Load() != nil {
		k++
	}
	if k == maxChunks {
		return nil, false
	}
	c := new(chunk)
	for i := range c.slots {
		s := &c.slots[i]
		s.index = uint32(k*chunkSize + i + 1)
		s.d = d
		s.done = func(di lb.DoneInfo) { s.finish(di) }
		if i > 1 {
			c.slots[i-1].next.Store(s.index)
		}
	}
	if !d.chunks[k].CompareAndSwap(nil, c) {
		return nil, true
	}
	d.push(&c.slots[1], &c.slots[chunkSize-1])
	return &c.slots[0], true
}

// push puts the chain of free slots from first to last (linked by next)
// at the head of the free list.
func (d *endpointData) push(first, last *slot) {
	for {
		h := d.free.Load()
		last.next.Store(uint32(h))
		if d.free.CompareAndSwap(h, (h>>32+1)<<32|uint64(first.index)) {
			return
		}
	}
}

// finish is a slot's Done: it frees the slot, adds the request's round
// trip to the estimate (with the failure penalty if it failed; none if it
// was never sent) and counts the request down. A second Done of the same
// pick does nothing, unless another pick holds the slot by then (a
// caller's bug: it then ends that pick's measurement early).
func (s *slot) finish(di lb.DoneInfo) {
	d := s.d
	now := d.m.now()
	start := s.start
	if !s.held.CompareAndSwap(true, false) {
		return
	}
	d.push(s, s)
	if di.Err != nil && errors.Is(di.Err, lb.ErrRequestNotSent) {
		d.release()
		return
	}
	rtt := float64(now - start)
	if di.Err != nil {
		rtt += float64(d.m.penalty.Load())
	}
	d.observe(rtt, now)
	d.release()
}

// observe adds a sample of rtt ns taken at meter time now to the estimate.
func (d *endpointData) observe(rtt float64, now int64) {
	t := tick(now)
	negInvTau := d.m.negInvTauValue()
	for {
		st := d.state.Load()
		if d.state.CompareAndSwap(st, next(st, rtt, t, negInvTau)) {
			return
		}
	}
}

// release counts one request down, never below zero (as least_request's
// counter: a stray Done cannot make the endpoint look lighter than idle).
func (d *endpointData) release() {
	if d.pending.Add(-1) < 0 {
		d.pending.Add(1)
	}
}

// cost returns the endpoint's cost at meter time now, and its requests in
// flight: the decayed estimate, raised to the age that the oldest request
// in flight is known to have reached when that is larger, times (requests
// in flight + 1). That age is the time since the later of the last pick
// that found the endpoint idle and the end of the tick of the estimate's
// last update (the last completion, or the endpoint's creation): a lower
// bound, since the update time is only known to its tick.
func (d *endpointData) cost(now int64, negInvTau float64) (float64, int64) {
	st := d.state.Load()
	t := tick(now)
	est := decayed(st, t, negInvTau)
	p := max(d.pending.Load(), 0)
	if p > 0 {
		_, at := estimateOf(st)
		since := max(d.busySince.Load(), (now>>tickBits-int64(int32(t-at))+1)<<tickBits)
		if stall := float64(now - since); stall > est {
			est = stall
		}
	}
	return est * float64(p+1), p
}
