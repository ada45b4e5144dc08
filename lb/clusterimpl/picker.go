package clusterimpl

import (
	"math/bits"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// picker applies the drops and the limit in front of the child's picker.
// It is immutable but for its draw sequence; Pick is safe for concurrent
// use and does not allocate.
type picker struct {
	child lb.Picker
	// ready is whether the child was READY: drops apply only then.
	ready bool
	drops []dropper
	// limited says whether limit applies.
	limited   bool
	limit     uint32
	counter   *Counter
	overLimit *overLimit
	// seed and draws make the drop draws: the k-th is mix(seed + k·γ).
	seed  uint64
	draws atomic.Uint64
}

// dropper is one drop category as a picker applies it.
type dropper struct {
	perMillion uint64
	err        error
	count      lb.Counter
}

// overLimit is the circuit breaker's refusal: its error and its count.
type overLimit struct {
	err   error
	count lb.Counter
}

// Pick drops the request when a category's draw says so (only while the
// child is READY), fails it when the limit's requests are in flight, and
// otherwise returns the child's pick, counted in flight until its Done:
//
//   - a drop: an [lb.DropError] naming the category;
//   - over the limit: an [lb.DropError] naming the limit;
//   - the child's error, as it is (the request is not counted).
func (p *picker) Pick(info lb.PickInfo) (lb.PickResult, error) {
	if p.ready {
		for i := range p.drops {
			if d := &p.drops[i]; p.drop(d.perMillion) {
				d.count.Add(1)
				return lb.PickResult{}, d.err
			}
		}
	}
	if !p.limited {
		return p.child.Pick(info)
	}
	if !p.counter.acquire(p.limit) {
		p.overLimit.count.Add(1)
		return lb.PickResult{}, p.overLimit.err
	}
	r, err := p.child.Pick(info)
	if err != nil {
		p.counter.n.Add(-1)
		return r, err
	}
	r.Done = p.counter.done(r.Done)
	return r, nil
}

// drop draws whether a request is dropped at perMillion out of [Million].
func (p *picker) drop(perMillion uint64) bool {
	switch perMillion {
	case 0:
		return false
	case Million:
		return true
	}
	return draw(p.seed, p.draws.Add(1)) < perMillion
}

// draw returns the k-th number of the sequence of seed, uniform in
// [0, Million): SplitMix64's output for state seed + k·γ, scaled by a
// 128-bit multiply (bias below Million/2^64).
func draw(seed, k uint64) uint64 {
	z := seed + k*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	hi, _ := bits.Mul64(z, Million)
	return hi
}
