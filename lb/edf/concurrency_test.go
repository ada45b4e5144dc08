package edf

import (
	"math/rand/v2"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// concurrentCases are weight lists for the concurrency tests: a period of 3
// (the counter wraps every few picks), random weights (300 entries, and
// 10 with the scan generator), and a heap.
func concurrentCases() []struct {
	name string
	w    []uint32
	mode mode
} {
	r := rand.New(rand.NewPCG(11, 12))
	random := make([]uint32, 300)
	for i := range random {
		random[i] = 1 + r.Uint32N(100)
	}
	// A ring with the scan generator. Weights up to 1000 keep a period
	// (the unit of the exact check) short; TestScanLargestWeights covers
	// large weights.
	small := make([]uint32, 10)
	for i := range small {
		small[i] = 1 + r.Uint32N(1000)
	}
	// A lazily filled table: a period of at most 128 picks per entry.
	lazy := make([]uint32, 10)
	for i := range lazy {
		lazy[i] = 1 + r.Uint32N(100)
	}
	return []struct {
		name string
		w    []uint32
		mode mode
	}{
		{"period3", []uint32{2, 1}, modeAuto},
		{"random300", random, modeAuto},
		{"scan10", small, modeAuto},
		{"lazy10", lazy, modeAuto},
		{"ring300", random, modeRing},
		{"heap", []uint32{5, 3, 2, 1, 1}, modeHeap},
	}
}

// TestConcurrentPicksExact checks that picks made by many goroutines at
// once still return every entry exactly weight/gcd times per period.
func TestConcurrentPicksExact(t *testing.T) {
	defer goleak.VerifyNone(t)
	const goroutines = 8
	for _, tc := range concurrentCases() {
		t.Run(tc.name, func(t *testing.T) {
			items := make([]int, len(tc.w))
			for i := range items {
				items[i] = i
			}
			s, err := New(entriesOf(items, tc.w), withMode(tc.mode), WithRandomStart(rand.New(rand.NewPCG(1, 2))))
			if err != nil {
				t.Fatal(err)
			}
			periods := max(1, 20000/int(s.Period())) // picks per goroutine: whole periods
			counts := make([][]uint64, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				counts[g] = make([]uint64, len(items))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range periods * int(s.Period()) {
						counts[g][s.Pick()]++
					}
				}()
			}
			wg.Wait()
			var gcdW uint32
			for _, x := range tc.w {
				gcdW = gcd(gcdW, x)
			}
			for i := range items {
				var total uint64
				for g := range goroutines {
					total += counts[g][i]
				}
				if want := uint64(goroutines*periods) * uint64(tc.w[i]/gcdW); total != want {
					t.Errorf("entry %d (weight %d): picked %d times, want %d", i, tc.w[i], total, want)
				}
			}
		})
	}
}

// TestConcurrentPickAndSkip races Pick against Skip and then checks that the
// scheduler stands exactly where a sequential one does after the same number
// of picks and skips.
func TestConcurrentPickAndSkip(t *testing.T) {
	defer goleak.VerifyNone(t)
	const goroutines = 6
	for _, tc := range concurrentCases() {
		t.Run(tc.name, func(t *testing.T) {
			items := make([]int, len(tc.w))
			for i := range items {
				items[i] = i
			}
			s, _ := New(entriesOf(items, tc.w), withMode(tc.mode))
			ref, _ := New(entriesOf(items, tc.w), withMode(tc.mode))
			skips := make([][]uint64, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				r := rand.New(rand.NewPCG(uint64(g), 5))
				for range 50 {
					skips[g] = append(skips[g], r.Uint64())
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 5000 {
						s.Pick()
						if i%100 == 0 {
							s.Skip(skips[g][i/100])
						}
					}
				}()
			}
			wg.Wait()
			ref.Skip(goroutines * 5000)
			for _, k := range skips {
				for _, x := range k {
					ref.Skip(x)
				}
			}
			for i := range 2 * int(s.Period()) {
				if got, want := s.Pick(), ref.Pick(); got != want {
					t.Fatalf("pick %d after the race: got %d, want %d (%v vs %v)", i, got, want, s, ref)
				}
			}
		})
	}
}

// TestNewFromWhilePicking calls NewFrom on a scheduler that other
// goroutines are picking from (as a policy rebuilds its picker while picks
// go on): NewFrom reads the ring's generator under its lock and may
// generate ahead. The race detector checks the reads; afterwards the
// scheduler must stand exactly where a sequential one does, and a NewFrom
// with the same entries must continue from there exactly.
func TestNewFromWhilePicking(t *testing.T) {
	defer goleak.VerifyNone(t)
	const goroutines, perG = 4, 5000
	cases := concurrentCases()
	r := rand.New(rand.NewPCG(21, 22))
	wide := make([]uint32, 50)
	for i := range wide {
		wide[i] = 1 + r.Uint32N(1e6)
	}
	cases = append(cases, struct {
		name string
		w    []uint32
		mode mode
	}{"1..1e6", wide, modeAuto})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items := make([]int, len(tc.w))
			for i := range items {
				items[i] = i
			}
			entries := entriesOf(items, tc.w)
			s, _ := New(entries, withMode(tc.mode))
			ref, _ := New(entries, withMode(tc.mode))
			var wg sync.WaitGroup
			for range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range perG {
						s.Pick()
					}
				}()
			}
			for range 200 {
				if _, err := NewFrom(s, entries, withMode(tc.mode)); err != nil {
					t.Error(err)
				}
			}
			wg.Wait()
			ref.Skip(goroutines * perG)
			next, _ := NewFrom(s, entries, withMode(tc.mode))
			for i := range 3000 {
				want := ref.Pick()
				if got := s.Pick(); got != want {
					t.Fatalf("pick %d after the race: got %d, want %d (%v vs %v)", i, got, want, s, ref)
				}
				if got := next.Pick(); got != want {
					t.Fatalf("pick %d of NewFrom after the race: got %d, want %d (%v vs %v)", i, got, want, next, ref)
				}
			}
		})
	}
}
