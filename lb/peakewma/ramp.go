package peakewma

import "math/bits"

// golden is 2^64 over the golden ratio, odd: the step between the extra
// numbers sampleRamping derives from a pick's state.
const golden = 0x9e3779b97f4a7c15

// rampRetries is how many numbers sampleRamping draws for a second entry
// distinct from the first before it takes one of the others uniformly.
const rampRetries = 8

// sampleRamping returns the two distinct entries (both 0 when there is
// one) that the pick at Weyl state s draws while an endpoint ramps, each in
// proportion to its slow start factor (p.draw): the first from the pick's
// number, the second from numbers derived from the same state (mix(s ^
// k·golden), k = 1, 2, ...), drawn again while it equals the first. After
// rampRetries equal draws (one entry holding nearly all the weight) the
// second is one of the others, uniformly, as sample takes it.
func (p *picker) sampleRamping(s uint64) (int, int) {
	n := len(p.entries)
	i := p.draw.Index(mix(s))
	if n == 1 {
		return 0, 0
	}
	g := uint64(golden)
	for range rampRetries {
		if j := p.draw.Index(mix(s ^ g)); j != i {
			return i, j
		}
		g += golden
	}
	j, _ := bits.Mul64(mix(s^g), uint64(n-1))
	if int(j) >= i {
		j++
	}
	return i, int(j)
}

// mix is wyrand's output for the state s.
func mix(s uint64) uint64 {
	hi, lo := bits.Mul64(s, s^wyMix)
	return hi ^ lo
}
