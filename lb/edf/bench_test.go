// Benchmarks of Pick and of building a scheduler, against baselines in the
// same run: an atomic-counter round robin (rr-baseline, the floor) and the
// specification's EDF with float64 deadlines in a container/heap behind a
// sync.Mutex (heap-baseline, from internal/edfbench, which the grpcgo
// module's BenchmarkEDFPick shares with grpc-go's weighted_round_robin as a
// third baseline). Weights come from the distributions of
// edfbench.Dists (the w= level). Reproduce with
//
//	go test -run '^$' -bench . -benchmem -benchtime=200ms ./lb/edf/
//
// Results, as ratios, are in docs/performance.md.

package edf_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/lb/edf"
	"github.com/lbkit/lbkit/lb/edf/edfbench"
)

// picker is what every implementation under benchmark provides.
type picker interface{ Pick() int }

// rrBaseline is plain round robin with an atomic counter: the floor.
type rrBaseline struct {
	items []int
	next  atomic.Uint64
}

func (r *rrBaseline) Pick() int {
	return r.items[(r.next.Add(1)-1)%uint64(len(r.items))]
}

func entries(w []uint32) []edf.Entry[int] {
	e := make([]edf.Entry[int], len(w))
	for i, x := range w {
		e[i] = edf.Entry[int]{Item: i, Weight: x}
	}
	return e
}

func newPicker(b *testing.B, impl string, w []uint32) picker {
	switch impl {
	case "edf":
		s, err := edf.New(entries(w))
		if err != nil {
			b.Fatal(err)
		}
		// The steady state: a table is filled by the first pass through
		// the period (BenchmarkFirstPeriod measures that pass).
		for range min(s.Period(), 1<<24) {
			s.Pick()
		}
		return s
	case "rr-baseline":
		r := &rrBaseline{items: make([]int, len(w))}
		for i := range r.items {
			r.items[i] = i
		}
		return r
	case "heap-baseline":
		return edfbench.NewHeapBaseline(w)
	}
	b.Fatalf("unknown impl %q", impl)
	return nil
}

var impls = []string{"edf", "rr-baseline", "heap-baseline"}

var sink atomic.Int64

// forEach runs f for every weight distribution, size and implementation,
// the implementations of one size one after the other, so that on a
// machine whose load changes they are measured under about the same load
// (scripts/edf-ratios.py pairs them run by run).
func forEach(b *testing.B, impls []string, f func(b *testing.B, impl string, w []uint32)) {
	for _, d := range edfbench.Dists {
		for _, n := range edfbench.Sizes {
			w := d.Weights(n)
			for _, impl := range impls {
				b.Run(fmt.Sprintf("w=%s/impl=%s/n=%d", d.Name, impl, n), func(b *testing.B) { f(b, impl, w) })
			}
		}
	}
}

// BenchmarkPick measures one Pick from one goroutine.
func BenchmarkPick(b *testing.B) {
	forEach(b, impls, func(b *testing.B, impl string, w []uint32) {
		p := newPicker(b, impl, w)
		b.ReportAllocs()
		var s int
		for b.Loop() {
			s += p.Pick()
		}
		sink.Add(int64(s))
	})
}

// BenchmarkPickParallel measures Pick from GOMAXPROCS goroutines at once.
func BenchmarkPickParallel(b *testing.B) {
	forEach(b, impls, func(b *testing.B, impl string, w []uint32) {
		p := newPicker(b, impl, w)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var s int
			for pb.Next() {
				s += p.Pick()
			}
			sink.Add(int64(s))
		})
	})
}

// BenchmarkBuild measures building a picker: edf.New, edf.NewFrom carrying
// over from a scheduler with the same entries 12345 picks in (edf-newfrom),
// and the heap baseline's construction. Besides B/op (all allocations of
// a build, temporary ones included) it reports retained-B: the heap bytes
// one built picker keeps alive.
func BenchmarkBuild(b *testing.B) {
	forEach(b, []string{"edf", "edf-newfrom", "heap-baseline"}, func(b *testing.B, impl string, w []uint32) {
		e := entries(w)
		prev, err := edf.New(e)
		if err != nil {
			b.Fatal(err)
		}
		prev.Skip(12345)
		build := func() any {
			switch impl {
			case "edf":
				s, _ := edf.New(e)
				return s
			case "edf-newfrom":
				s, _ := edf.NewFrom(prev, e)
				return s
			}
			return edfbench.NewHeapBaseline(w)
		}
		kept := retained(build) // before the loop leaves garbage behind
		b.ReportAllocs()
		for b.Loop() {
			build()
		}
		b.ReportMetric(float64(kept), "retained-B")
	})
}

// retained returns the growth of the live heap while the result of build
// is kept.
func retained(build func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(x)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// a58Weights returns n weights shaped as gRFC A58 computes them from load
// reports, qps / (utilization + eps/qps * errorUtilizationPenalty), with
// qps 800..1200, utilization 0.2..0.95, eps 0..5 and the default penalty
// 1.0, then scaled as grpc-go's weighted_round_robin scales them for its
// scheduler: the largest to 65535, every other in proportion, at least 1.
// The EDF is rebuilt from such weights every weightUpdatePeriod.
func a58Weights(n int) []uint32 {
	r := rand.New(rand.NewPCG(58, uint64(n)))
	f := make([]float64, n)
	var hi float64
	for i := range f {
		qps := 800 + 400*r.Float64()
		util := 0.2 + 0.75*r.Float64()
		eps := 5 * r.Float64()
		f[i] = qps / (util + eps/qps)
		hi = max(hi, f[i])
	}
	w := make([]uint32, n)
	for i, x := range f {
		w[i] = uint32(max(1, math.Round(x/hi*65535)))
	}
	return w
}

// BenchmarkBuildA58 measures New and NewFrom (from a scheduler over the
// same items with the previous round's weights, 12345 picks in) over
// A58-shaped weights: the rebuild every weightUpdatePeriod.
func BenchmarkBuildA58(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		w := a58Weights(n)
		old := a58Weights(n + 1)[:n]
		prev, err := edf.New(entries(old))
		if err != nil {
			b.Fatal(err)
		}
		prev.Skip(12345)
		e := entries(w)
		b.Run(fmt.Sprintf("impl=edf/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				edf.New(e)
			}
		})
		b.Run(fmt.Sprintf("impl=edf-newfrom/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				edf.NewFrom(prev, e)
			}
		})
	}
}
