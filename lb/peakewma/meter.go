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
	// decay is the decay time's table: replaced, never changed, when the
	// decay time changes.
	decay atomic.Pointer[decay]
	// penalty is the failure penalty in ns.
	penalty atomic.Int64
}

func newMeter(clk clock.Clock) *meter {
	m := &meter{clk: clk, base: clk.Now()}
	m.set(Config{}.effective())
	return m
}

// set applies an effective config's decay time and failure penalty. A
// config with the decay time in force keeps its table.
func (m *meter) set(c Config) {
	if d := m.decay.Load(); d == nil || d.tau != c.DecayTime {
		m.decay.Store(newDecay(c.DecayTime))
	}
	m.penalty.Store(int64(c.FailurePenalty))
}

// decay is the decay weight exp(-Δ/τ) of one decay time τ, for Δ a whole
// number k of ticks: read from two tables for k < decayTableTicks (the
// product lo[k mod 256]·hi[k / 256] of two weights math.Exp computed
// when τ was set), math.Exp beyond. Pick and Done call it two and one
// times: the tables spare them math.Exp's polynomial for every endpoint
// read within about 17 s of its last update.
//
// Error bound: each table entry is within 1 ulp of its exact value
// (math.Exp's bound), their product is rounded once, and the two
// arguments' roundings shift the exponent by at most 2⁻⁵² of its
// magnitude, at most 16384·2²⁰ ns / MinDecayTime ≈ 172 here. The
// weight is therefore within 2.5·2⁻⁵² + 172·2⁻⁵² < 4·10⁻¹⁴ relative of
// exp(-Δ/τ) (TestDecayTableErrorBound checks 1·10⁻¹³ against math.Exp
// over the range of τ and of Δ), far below the float32 rounding
// (6·10⁻⁸) of the estimate it multiplies.
type decay struct {
	tau time.Duration
	// negInvTau is -1/τ in 1/ns.
	negInvTau float64
	lo        [decayLo]float64 // lo[j] = exp(-j ticks/τ)
	hi        [decayHi]float64 // hi[j] = exp(-256·j ticks/τ)
}

// The tables' sizes: decayTableTicks = decayLo·decayHi ticks, about 17 s.
const (
	decayLo         = 256
	decayHi         = 64
	decayTableTicks = decayLo * decayHi
)

// newDecay returns the tables of decay time tau.
func newDecay(tau time.Duration) *decay {
	d := &decay{tau: tau, negInvTau: -1 / float64(tau)}
	for j := range d.lo {
		d.lo[j] = math.Exp(float64(int64(j)<<tickBits) * d.negInvTau)
	}
	for j := range d.hi {
		d.hi[j] = math.Exp(float64(int64(j*decayLo)<<tickBits) * d.negInvTau)
	}
	return d
}

// weight returns exp(-k ticks/τ) for k > 0 ticks (see decay).
func (d *decay) weight(k int32) float64 {
	if k < decayTableTicks {
		return d.lo[k%decayLo] * d.hi[k/decayLo]
	}
	return math.Exp(float64(int64(k)<<tickBits) * d.negInvTau)
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
func decayWeight(at, now uint32, dec *decay) float64 {
	elapsed := int32(now - at)
	if elapsed <= 0 {
		return 1
	}
	return dec.weight(elapsed)
}

// decayed returns the estimate of st at tick now: it decays toward zero
// with time constant τ since its last update.
func decayed(st uint64, now uint32, dec *decay) float64 {
	est, at := estimateOf(st)
	return est * decayWeight(at, now, dec)
}
