package edf

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"pgregory.net/rapid"
)

// TestRingMatchesHeap checks the ring against the heap (itself checked
// against the model by TestMatchesModel) for up to 300 entries, across
// many blocks and slices, for every shape of weights of genWeights, with
// skips of any size, and with the ticket
// counter started anywhere, including just before its wrap at 2^64.
func TestRingMatchesHeap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 300).Draw(t, "n")
		w, items := genWeights(t, n, true), indices(n)
		origin := rapid.OneOf(rapid.Uint64(), rapid.Uint64Range(math.MaxUint64-3000, math.MaxUint64)).Draw(t, "origin")
		r, err := New(entriesOf(items, w), withMode(modeRing), withOrigin(origin))
		if err != nil {
			t.Fatal(err)
		}
		h, _ := New(entriesOf(items, w), withMode(modeHeap))
		for range rapid.IntRange(1, 4).Draw(t, "rounds") {
			for i := range rapid.IntRange(0, 3000).Draw(t, "picks") {
				if x, y := r.Pick(), h.Pick(); x != y {
					t.Fatalf("pick %d: ring gave %d, heap gave %d (%v)", i, x, y, r)
				}
			}
			k := rapid.OneOf(rapid.Uint64Range(0, 5000), rapid.Uint64()).Draw(t, "skip")
			r.Skip(k)
			h.Skip(k)
			if r.position() != h.position() {
				t.Fatalf("after Skip(%d): ring at %d, heap at %d", k, r.position(), h.position())
			}
		}
	})
}

// TestRingStaleTicket covers a pick whose block was replaced before it
// read it (its goroutine stalled while others picked): it must still get
// the entry of its own position.
func TestRingStaleTicket(t *testing.T) {
	w := []uint32{1000003, 999, 77, 5, 5, 1}
	items := []int{0, 1, 2, 3, 4, 5}
	s, _ := New(entriesOf(items, w), withMode(modeRing))
	h, _ := New(entriesOf(items, w), withMode(modeHeap))
	var want []int
	for range 40 << s.ring.shift {
		want = append(want, h.Pick())
		s.Pick()
	}
	for _, tk := range []uint64{0, 1, 63, 64, 1000, 5 << s.ring.shift} {
		if _, ok := s.ring.read(tk); ok {
			t.Fatalf("ticket %d: block still readable; the test needs it replaced", tk)
		}
		if got := s.items[s.ring.slow(tk)]; got != want[tk] {
			t.Errorf("stale ticket %d: got %d, want %d", tk, got, want[tk])
		}
	}
}

// TestConcurrentPicksArePrefix checks that the picks of many goroutines,
// taken together, are exactly the first K entries of the schedule as a
// multiset, on a ring and on a lazily filled table (whose chunks the
// goroutines generate as they go); K is not a multiple of the block or
// chunk size or of the period.
func TestConcurrentPicksArePrefix(t *testing.T) {
	defer goleak.VerifyNone(t)
	const goroutines, perG = 8, 3001
	r := rand.New(rand.NewPCG(5, 6))
	cases := map[string][]uint32{}
	for _, c := range []struct {
		name   string
		n      int
		lo, hi uint32
	}{{"1..1e6", 50, 1, 1e6}, {"63..64", 300, 63, 64}, {"1..100", 700, 1, 100}} {
		w := make([]uint32, c.n)
		for i := range w {
			w[i] = c.lo + r.Uint32N(c.hi-c.lo+1)
		}
		cases[c.name] = w
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			items := make([]int, len(w))
			for i := range items {
				items[i] = i
			}
			for _, m := range []mode{modeRing, modeLazy} {
				s, _ := New(entriesOf(items, w), withMode(m))
				h, _ := New(entriesOf(items, w), withMode(modeHeap))
				counts := make([][]int, goroutines)
				var wg sync.WaitGroup
				for g := range goroutines {
					counts[g] = make([]int, len(w))
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range perG {
							counts[g][s.Pick()]++
						}
					}()
				}
				wg.Wait()
				want := make([]int, len(w))
				for range goroutines * perG {
					want[h.Pick()]++
				}
				for i := range w {
					got := 0
					for g := range goroutines {
						got += counts[g][i]
					}
					if got != want[i] {
						t.Errorf("entry %d (weight %d): picked %d times by all goroutines, want %d", i, w[i], got, want[i])
					}
				}
			}
		})
	}
}

// TestCountsMatchSeek checks the counts NewFrom reads from a table or a
// ring (its generator and the blocks around it) against seek at the same
// position, after picks and skips of any size.
func TestCountsMatchSeek(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		huge := rapid.Bool().Draw(t, "huge")
		m := genMode(t, huge)
		n := rapid.IntRange(1, 200).Draw(t, "n")
		w := genWeights(t, n, huge)
		items := make([]int, n)
		for i := range items {
			items[i] = i
		}
		origin := rapid.OneOf(rapid.Just(uint64(0)), rapid.Uint64()).Draw(t, "origin")
		s, err := New(entriesOf(items, w), withMode(m), withOrigin(origin))
		if err != nil {
			t.Fatal(err)
		}
		for range rapid.IntRange(1, 4).Draw(t, "rounds") {
			for range rapid.IntRange(0, 3000).Draw(t, "picks") {
				s.Pick()
			}
			s.Skip(rapid.OneOf(rapid.Uint64Range(0, 3000), rapid.Uint64Range(1<<20, 1<<40), rapid.Uint64()).Draw(t, "skip"))
			for range rapid.SampledFrom([]int{0, 1, 63, 64, 65, 100}).Draw(t, "more") {
				s.Pick()
			}
			got := make([]uint64, n)
			pos := s.counts(got)
			want := make([]uint64, n)
			wantPos := s.position()
			if wantPos != 0 {
				seek(s.weights, s.maxW, wantPos, func(i int, c uint64) { want[i] = c })
			}
			if pos != wantPos {
				t.Fatalf("counts gave position %d, want %d (%v)", pos, wantPos, s)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("entry %d (weight %d) at position %d: count %d, want %d (%v)", i, s.weights[i], pos, got[i], want[i], s)
				}
			}
		}
	})
}
