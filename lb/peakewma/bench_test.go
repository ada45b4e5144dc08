package peakewma

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// mutexPicker is the baseline: the same rule (two distinct choices, cost =
// peak-EWMA round trip × (in flight + 1), start times in preallocated
// slots so that it does not allocate either) with the obvious
// implementation: one mutex around a math/rand/v2 source and plain fields,
// taken by Pick and again by Done. It reads the same clock as often.
type mutexPicker struct {
	mu      sync.Mutex
	clk     clock.Clock
	base    time.Time
	tau     float64
	rng     *rand.Rand
	entries []*mutexEntry
}

type mutexEntry struct {
	sc      lb.SubConn
	est     float64
	stamp   int64
	pending int64
	free    []*mutexSlot
}

type mutexSlot struct {
	start int64
	done  func(lb.DoneInfo)
}

func newMutexPicker(clk clock.Clock, scs []lb.SubConn) *mutexPicker {
	p := &mutexPicker{clk: clk, base: clk.Now(), tau: float64(DefaultDecayTime), rng: rand.New(rand.NewPCG(1, 2))}
	for _, sc := range scs {
		e := &mutexEntry{sc: sc, est: float64(DefaultDefaultRTT)}
		for range 64 {
			s := &mutexSlot{}
			s.done = func(lb.DoneInfo) { p.finish(e, s) }
			e.free = append(e.free, s)
		}
		p.entries = append(p.entries, e)
	}
	return p
}

func (p *mutexPicker) now() int64 { return int64(p.clk.Since(p.base)) }

func (p *mutexPicker) cost(e *mutexEntry, now int64) float64 {
	return e.est * math.Exp(-float64(now-e.stamp)/p.tau) * float64(e.pending+1)
}

func (p *mutexPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	now := p.now()
	p.mu.Lock()
	n := len(p.entries)
	i := p.rng.IntN(n)
	j := p.rng.IntN(n - 1)
	if j >= i {
		j++
	}
	best := p.entries[i]
	if e := p.entries[j]; p.cost(e, now) < p.cost(best, now) {
		best = e
	}
	best.pending++
	s := best.free[len(best.free)-1]
	best.free = best.free[:len(best.free)-1]
	s.start = now
	p.mu.Unlock()
	return lb.PickResult{SubConn: best.sc, Done: s.done}, nil
}

func (p *mutexPicker) finish(e *mutexEntry, s *mutexSlot) {
	now := p.now()
	p.mu.Lock()
	rtt := float64(now - s.start)
	w := math.Exp(-float64(now-e.stamp) / p.tau)
	if d := e.est * w; rtt > d {
		e.est = rtt
	} else {
		e.est = d + rtt*(1-w)
	}
	e.stamp = now
	e.pending--
	e.free = append(e.free, s)
	p.mu.Unlock()
}

// frozenClock is a clock whose reads cost a field load: with it the
// benchmarks measure the pickers' own work, apart from the clock's (which
// BenchmarkClockRead measures).
type frozenClock struct {
	clock.Clock
	t time.Time
}

func (c frozenClock) Now() time.Time                  { return c.t }
func (c frozenClock) Since(t time.Time) time.Duration { return c.t.Sub(t) }

// benchPickers returns the policy's picker over n endpoints on clk (default
// config) and the baseline over the same SubConns and clock.
func benchPickers(b *testing.B, clk clock.Clock, n int) []struct {
	name   string
	picker lb.Picker
} {
	h := lbtest.New(b)
	h.Build(Builder{})
	if err := h.UpdateAddresses(nil, addrs(n)...); err != nil {
		b.Fatal(err)
	}
	var scs []lb.SubConn
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
		scs = append(scs, sc)
	}
	m := newMeter(clk)
	entries := make([]*endpointData, n)
	for i, sc := range scs {
		entries[i] = new(endpointData)
		entries[i].init(sc, m, float64(DefaultDefaultRTT), 0)
	}
	// ramping is the picker while every endpoint is in its slow start
	// window: the same entries, with factors and the draw by factor
	// (issue 27).
	ramping := newPicker(entries, m, m.decay.Load(), 1)
	ramping.factors = make([]float64, n)
	for i := range ramping.factors {
		ramping.factors[i] = 0.1 + 0.9*float64(i)/float64(n)
	}
	draw := slowstart.NewSampler(ramping.factors)
	ramping.draw = &draw
	return []struct {
		name   string
		picker lb.Picker
	}{
		{"peak_ewma", newPicker(entries, m, m.decay.Load(), 1)},
		{"peak_ewma-slowstart", ramping},
		{"mutex-baseline", newMutexPicker(clk, scs)},
	}
}

// benchClock is a clock the benchmarks run on, and its name.
type benchClock struct {
	name string
	clk  clock.Clock
}

// benchClocks returns the real clock and a frozen one (see frozenClock).
func benchClocks() []benchClock {
	return []benchClock{{"real", clock.New()}, {"frozen", frozenClock{t: time.Unix(1e9, 0)}}}
}

// BenchmarkPick measures one pick and its Done, from one goroutine, for
// the policy's picker and the mutex baseline, both on the real clock and
// on a frozen one (the pickers' own work).
func BenchmarkPick(b *testing.B) { benchmarkPick(b, false) }

// BenchmarkPickParallel is BenchmarkPick from four goroutines per core at
// once, as a server with many requests in flight calls its channel.
func BenchmarkPickParallel(b *testing.B) { benchmarkPick(b, true) }

func benchmarkPick(b *testing.B, parallel bool) {
	info := lb.PickInfo{Ctx: context.Background(), Method: "/pkg.Service/Method"}
	for _, c := range benchClocks() {
		for _, n := range []int{10, 100, 1000} {
			for _, impl := range benchPickers(b, c.clk, n) {
				b.Run(fmt.Sprintf("clock=%s/impl=%s/n=%d", c.name, impl.name, n), func(b *testing.B) {
					lbtest.BenchmarkPicks(b, impl.picker, info, parallel)
				})
			}
		}
	}
}

// BenchmarkClockRead measures what Pick and Done pay to read the time:
// the real clock's Since (the monotonic clock only) and clock.Mock's (a
// mutex), from one goroutine and from four per core.
func BenchmarkClockRead(b *testing.B) {
	for _, c := range []struct {
		name string
		clk  clock.Clock
	}{{"real", clock.New()}, {"mock", clock.NewMock()}} {
		base := c.clk.Now()
		b.Run("clock="+c.name+"/serial", func(b *testing.B) {
			for range b.N {
				_ = c.clk.Since(base)
			}
		})
		b.Run("clock="+c.name+"/parallel", func(b *testing.B) {
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = c.clk.Since(base)
				}
			})
		})
	}
}
