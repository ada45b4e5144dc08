package peakewma

import (
	"math/bits"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// picker is the READY picker: power of two choices by peak-EWMA cost. Each
// Pick samples two distinct entries uniformly at random (one when there is
// only one) and returns the one of lower cost (see endpointData.cost),
// the one with fewer requests in flight among equal costs, the first
// sampled among equals in both. While an endpoint is in its slow start
// window, the two are drawn in proportion to the entries' slow start
// factors and each cost is divided by its factor (see factors, draw).
//
// # Random numbers
//
// The picker's numbers are wyrand's: the k-th (k >= 1) is
// mix(seed + k·weyl), seed drawn from the tree's random source when the
// picker was built. One atomic add claims a pick's number, so serial picks
// are reproducible from the seed, concurrent picks never share a number,
// and Pick takes no lock. One number gives both indices: the high half of
// its product with n is the first, and the low half (the fraction),
// multiplied by n-1, gives the second among the others.
type picker struct {
	entries []*endpointData
	// factors, when not nil, are the entries' slow start factors, in
	// (0, 1], fixed when the picker was built: an entry's cost is then
	// divided by its factor. Nil while no endpoint ramps.
	factors []float64
	// draw, when not nil, draws the two entries in proportion to their
	// factors (see sampleRamping). Nil while no endpoint ramps.
	draw *slowstart.Sampler
	m    *meter
	// decay is the decay time's table of the config the picker was
	// built with.
	decay *decay
	// Every Pick writes next: it has a cache line of its own, apart from
	// the fields above, which every Pick reads.
	_    [64]byte
	next atomic.Uint64
	_    [56]byte
}

const (
	// weyl is wyrand's increment: the sequence's k-th state is
	// seed + k·weyl.
	weyl = 0xa0761d6478bd642f
	// wyMix is the constant wyrand multiplies a state by, xored with
	// itself.
	wyMix = 0xe7037ed1a0b428db
)

// newPicker returns a picker over entries (not empty) with the sequence from
// seed.
func newPicker(entries []*endpointData, m *meter, dec *decay, seed uint64) *picker {
	p := &picker{entries: entries, m: m, decay: dec}
	p.next.Store(seed)
	return p
}

// sample returns the two indices that the number at Weyl state s samples:
// distinct when there are two entries or more, both 0 when there is one.
func (p *picker) sample(s uint64) (int, int) {
	hi, lo := bits.Mul64(s, s^wyMix)
	n := uint64(len(p.entries))
	i, frac := bits.Mul64(hi^lo, n)
	if n == 1 {
		return 0, 0
	}
	j, _ := bits.Mul64(frac, n-1)
	if j >= i {
		j++
	}
	return int(i), int(j)
}

// Pick returns the sampled READY SubConn of lower cost and counts the
// request against it until Done, which measures its round trip. It never
// fails, never blocks, and allocates only when an endpoint's requests in
// flight reach a new maximum (endpointData.grow).
func (p *picker) Pick(lb.PickInfo) (lb.PickResult, error) {
	now := p.m.now()
	s := p.next.Add(weyl)
	i, j := p.sample(s)
	if p.draw != nil {
		i, j = p.sampleRamping(s)
	}
	best := p.entries[i]
	if i != j {
		ci, pi := best.cost(now, p.decay)
		e := p.entries[j]
		cj, pj := e.cost(now, p.decay)
		if p.factors != nil {
			ci /= p.factors[i]
			cj /= p.factors[j]
		}
		if cj < ci || (cj == ci && pj < pi) {
			best = e
		}
	}
	return lb.PickResult{SubConn: best.sc, Done: best.acquire(now)}, nil
}
