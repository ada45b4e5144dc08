package peakewma

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// meter is what every endpoint of one balancer shares: the clock its
// round-trip times are read from and the parameters Done applies. The
// parameters change with the config (on the serializer) while Done runs on
// any goroutine: they are atomic.
type meter struct {
	clk clock.Clock
	// base is the time read at Build; the meter's times are nanoseconds
	// since it ([meter.now]).
	base time.Time
	// negInvTau is -1/τ in 1/ns, as float64 bits.
	negInvTau atomic.Uint64
	// penalty is the failure penalty in ns.
	penalty atomic.Int64
}

func newMeter(clk clock.Clock) *meter {
	m := &meter{clk: clk, base: clk.Now()}
	m.set(Config{}.effective())
	return m
}

// set applies an effective config's decay time and failure penalty.
func (m *meter) set(c Config) {
	m.negInvTau.Store(math.Float64bits(-1 / float64(c.DecayTime)))
	m.penalty.Store(int64(c.FailurePenalty))
}

// now returns the nanoseconds since base. On the real clock it reads the
// monotonic clock only (time.Since of a time with a monotonic reading).
func (m *meter) now() int64 { return int64(m.clk.Since(m.base)) }

// The round-trip estimate of an endpoint is one atomic word, so that Done
// updates it with one compare-and-swap and Pick reads it with one load:
// the estimate in ns as a float32 in the high 32 bits, and the time of its
// last update in ticks of 2^tickBits ns (about 1.05 ms), modulo 2^32, in
// the low 32 bits. Elapsed ticks are read as a signed 32-bit difference:
// an estimate not updated for 2^31 ticks (about 26 days) reads as not
// decayed (docs/choices.md).
const tickBits = 20

// tick returns the tick of a meter time.
func tick(now int64) uint32 { return uint32(now >> tickBits) }

// pack returns the state word of an estimate at a tick.
func pack(est float64, at uint32) uint64 {
	return uint64(math.Float32bits(float32(est)))<<32 | uint64(at)
}

// estimateOf returns the estimate of a state word and its tick.
func estimateOf(st uint64) (float64, uint32) {
	return float64(math.Float32frombits(uint32(st >> 32))), uint32(st)
}

// decayWeight returns exp(-elapsed/τ) for the ticks from at to now, 1 when
// now is not after at (a Done that read the clock before another updated
// the estimate).
func decayWeight(at, now uint32, negInvTau float64) float64 {
	elapsed := int32(now - at)
	if elapsed <= 0 {
		return 1
	}
	return math.Exp(float64(int64(elapsed)<<tickBits) * negInvTau)
}

// decayed returns the estimate of st at tick now: it decays toward zero
// with time constant τ since its last update.
func decayed(st uint64, now uint32, negInvTau float64) float64 {
	est, at := estimateOf(st)
	return est * decayWeight(at, now, negInvTau)
}

// next returns the state after a sample of rtt ns at tick now, from st:
// with w = exp(-Δ/τ), Δ the time since the last update and d = est·w the
// decayed estimate, a sample above d replaces the estimate (the peak), and
// any other gives d + rtt·(1-w). The update time is the later of the two.
func next(st uint64, rtt float64, now uint32, negInvTau float64) uint64 {
	est, at := estimateOf(st)
	w := decayWeight(at, now, negInvTau)
	d := est * w
	if rtt > d {
		d = rtt
	} else {
		d += rtt * (1 - w)
	}
	if int32(now-at) < 0 {
		now = at
	}
	return pack(d, now)
}

// negInvTauValue returns -1/τ in 1/ns.
func (m *meter) negInvTauValue() float64 { return math.Float64frombits(m.negInvTau.Load()) }
