// Package edfbench holds what the EDF benchmarks of lb/edf and of the
// grpcgo adapter share: the weight distributions they run at and the
// mutex-and-heap EDF baseline, so that both measure against the same code.
// It is for benchmarks only.
package edfbench

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"sync"
)

// Dist is a named distribution of weights.
type Dist struct {
	// Name is used as the benchmark level "w=<Name>".
	Name string
	// Weights returns n weights, the same for the same n every time.
	Weights func(n int) []uint32
}

// Dists are the weight ranges the EDF benchmarks run at: uniform 1..100
// (percentages, small integers), uniform 1..1e6 (capacity-style EDS
// load_balancing_weight values), 63..64 (nearly equal weights, no common
// factor) and a heavy tail (Pareto, shape 1.2, capped at 1e6: most weights
// 1..3, a few in the thousands and beyond).
var Dists = []Dist{
	{"1..100", func(n int) []uint32 { return uniform(n, 1, 100) }},
	{"1..1e6", func(n int) []uint32 { return uniform(n, 1, 1e6) }},
	{"63..64", func(n int) []uint32 { return uniform(n, 63, 64) }},
	{"pareto", pareto},
}

// Sizes are the entry counts the EDF benchmarks run at.
var Sizes = []int{10, 100, 1000, 10000, 100000}

func uniform(n int, lo, hi uint32) []uint32 {
	r := rand.New(rand.NewPCG(42, uint64(n)))
	w := make([]uint32, n)
	for i := range w {
		w[i] = lo + r.Uint32N(hi-lo+1)
	}
	return w
}

func pareto(n int) []uint32 {
	r := rand.New(rand.NewPCG(43, uint64(n)))
	w := make([]uint32, n)
	for i := range w {
		u := 1 - r.Float64() // in (0, 1]
		w[i] = uint32(min(1e6, math.Floor(math.Pow(u, -1/1.2))))
	}
	return w
}

// HeapBaseline is the EDF picker as the specification describes it: float64
// deadlines in a container/heap behind a sync.Mutex. It is safe for
// concurrent use.
type HeapBaseline struct {
	mu sync.Mutex
	h  edfHeap
}

type edfEntry struct {
	deadline float64
	order    int
	weight   float64
	item     int
}

type edfHeap []*edfEntry

func (h edfHeap) Len() int { return len(h) }
func (h edfHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].order < h[j].order
}
func (h edfHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *edfHeap) Push(x any)   { *h = append(*h, x.(*edfEntry)) }
func (h *edfHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// NewHeapBaseline returns a HeapBaseline over items 0..len(w)-1 with
// weights w.
func NewHeapBaseline(w []uint32) *HeapBaseline {
	b := &HeapBaseline{h: make(edfHeap, 0, len(w))}
	for i, x := range w {
		b.h = append(b.h, &edfEntry{deadline: 1 / float64(x), order: i, weight: float64(x), item: i})
	}
	heap.Init(&b.h)
	return b
}

// Pick returns the item with the earliest deadline and advances it.
func (b *HeapBaseline) Pick() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.h[0]
	e.deadline += 1 / e.weight
	heap.Fix(&b.h, 0)
	return e.item
}
