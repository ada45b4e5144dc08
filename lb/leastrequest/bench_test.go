package leastrequest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// mutexPicker is the baseline: the same two-choice rule with the obvious
// implementation, one mutex around a math/rand/v2 source and plain
// counters, taken by Pick and again by Done.
type mutexPicker struct {
	mu      sync.Mutex
	rng     *rand.Rand
	entries []mutexEntry
}

type mutexEntry struct {
	sc     lb.SubConn
	active int64
	done   func(lb.DoneInfo)
}

func newMutexPicker(scs []lb.SubConn) *mutexPicker {
	p := &mutexPicker{rng: rand.New(rand.NewPCG(1, 2)), entries: make([]mutexEntry, len(scs))}
	for i, sc := range scs {
		e := &p.entries[i]
		e.sc = sc
		e.done = func(lb.DoneInfo) {
			p.mu.Lock()
			e.active--
			p.mu.Unlock()
		}
	}
	return p
}

func (p *mutexPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	p.mu.Lock()
	best := &p.entries[p.rng.IntN(len(p.entries))]
	if e := &p.entries[p.rng.IntN(len(p.entries))]; e.active < best.active {
		best = e
	}
	best.active++
	p.mu.Unlock()
	return lb.PickResult{SubConn: best.sc, Done: best.done}, nil
}

// benchPickers returns the policy's READY picker over n endpoints (default
// config: two choices) and the baseline over the same SubConns.
func benchPickers(b *testing.B, n int) []struct {
	name   string
	picker lb.Picker
} {
	h := lbtest.New(b)
	h.Build(leastrequest.Builder{})
	as := make([]resolver.Address, n)
	for i := range as {
		as[i] = resolver.Address{Addr: fmt.Sprintf("10.0.%d.%d:443", i>>8, i&0xff)}
	}
	if err := h.UpdateAddresses(nil, as...); err != nil {
		b.Fatal(err)
	}
	var scs []lb.SubConn
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
		scs = append(scs, sc)
	}
	return []struct {
		name   string
		picker lb.Picker
	}{
		{"least_request", h.State().Picker},
		{"least_request-slowstart", rampingPicker(b, as)},
		{"mutex-baseline", newMutexPicker(scs)},
	}
}

// rampingPicker returns the policy's READY picker over as while every
// endpoint is in its slow start window: the pick compares
// (outstanding+1)/factor.
func rampingPicker(b *testing.B, as []resolver.Address) lb.Picker {
	h := lbtest.New(b)
	h.Build(leastrequest.Builder{})
	cfg := leastrequest.Config{SlowStart: &slowstart.Config{SlowStartWindow: time.Minute, Aggression: 1, MinWeightPercent: 10}}
	if err := h.UpdateAddresses(cfg, as...); err != nil {
		b.Fatal(err)
	}
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	return h.State().Picker
}

// BenchmarkPick measures one pick and its Done, from one goroutine, for
// the policy's picker and the mutex baseline.
func BenchmarkPick(b *testing.B) { benchmarkPick(b, false) }

// BenchmarkPickParallel is BenchmarkPick from four goroutines per core at
// once, as a server with many requests in flight calls its channel: the
// case a shared mutex serializes.
func BenchmarkPickParallel(b *testing.B) { benchmarkPick(b, true) }

func benchmarkPick(b *testing.B, parallel bool) {
	info := lb.PickInfo{Ctx: context.Background(), Method: "/pkg.Service/Method"}
	for _, n := range []int{10, 100, 1000} {
		for _, impl := range benchPickers(b, n) {
			b.Run(fmt.Sprintf("impl=%s/n=%d", impl.name, n), func(b *testing.B) {
				lbtest.BenchmarkPicks(b, impl.picker, info, parallel)
			})
		}
	}
}
