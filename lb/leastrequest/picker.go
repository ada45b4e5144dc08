package leastrequest

import (
	"math/bits"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// picker is gRFC A48's picker: each Pick samples choices entries uniformly at
// random, with replacement, and returns the first sampled entry with the
// fewest outstanding requests, counting the request in it.
//
// Its random numbers are the SplitMix64 sequence from seed, drawn from the
// tree's random source when the picker was built: the k-th number is
// mix(seed + (k+1)·γ). Each Pick claims choices consecutive k with one
// atomic add on next, so Pick takes no lock, never allocates, and a
// picker's draws are reproducible from its seed when picks are serial.
type picker struct {
	// entries are the READY endpoints' data, owned by the balancer's
	// endpoint records and shared by every picker: the counters outlive
	// the picker.
	entries []*endpointData
	choices uint64
	seed    uint64
	// next is the index of the next unclaimed number of the sequence. It
	// has a cache line of its own: every Pick writes it, and the fields
	// above, read by every Pick, would otherwise move between cores with
	// it.
	_    [64]byte
	next atomic.Uint64
	_    [56]byte
}

// newPicker returns a picker over entries (not empty) sampling choices
// entries per pick.
func newPicker(entries []*endpointData, choices int, seed uint64) *picker {
	return &picker{entries: entries, choices: uint64(choices), seed: seed}
}

// golden is SplitMix64's increment, 2^64 divided by the golden ratio.
const golden = 0x9e3779b97f4a7c15

// index returns the entry that the k-th number of the picker's sequence
// samples: the number scaled to [0, len(entries)) by a 128-bit multiply
// (bias below len/2^64).
func (p *picker) index(k uint64) int {
	z := p.seed + (k+1)*golden
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	hi, _ := bits.Mul64(z, uint64(len(p.entries)))
	return int(hi)
}

// Pick returns the sampled READY SubConn with the fewest outstanding
// requests (the first sampled among equals) and counts the request against
// it until Done. It never fails.
func (p *picker) Pick(lb.PickInfo) (lb.PickResult, error) {
	k := p.next.Add(p.choices) - p.choices
	best := p.entries[p.index(k)]
	least := best.active.Load()
	for i := uint64(1); i < p.choices; i++ {
		e := p.entries[p.index(k+i)]
		if n := e.active.Load(); n < least {
			best, least = e, n
		}
	}
	best.active.Add(1)
	return lb.PickResult{SubConn: best.sc, Done: best.done}, nil
}
