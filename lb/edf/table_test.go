package edf

import (
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestTableMatchesHeap checks that a lazily filled table gives exactly the
// heap's sequence (the specification's algorithm with exact deadlines)
// whatever order its chunks are filled in: from a random start, across
// skips near the generator's run (continued) and far from it (a seek),
// across the end of the period, and after NewFrom carry-over from a table
// or into one, with the generator positioned by the carried counts.
func TestTableMatchesHeap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		n := rapid.IntRange(2, 300).Draw(t, "n")
		items, w := indices(n), genWeights(t, n, false)
		var opts []Option
		if rapid.Bool().Draw(t, "randomStart") {
			opts = append(opts, WithRandomStart(rand.New(rand.NewPCG(seed, 1))))
		}
		s, err := New(entriesOf(items, w), append(opts, withMode(modeLazy))...)
		if err != nil {
			t.Fatal(err)
		}
		if opts != nil {
			opts[0] = WithRandomStart(rand.New(rand.NewPCG(seed, 1)))
		}
		h, _ := New(entriesOf(items, w), append(opts, withMode(modeHeap))...)
		nextItem := n
		for step := range rapid.IntRange(1, 12).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				for k := range rapid.IntRange(0, 3000).Draw(t, "picks") {
					if got, want := s.Pick(), h.Pick(); got != want {
						t.Fatalf("step %d, pick %d: table gave %d, heap %d (%v)", step, k, got, want, s)
					}
				}
			case 2:
				k := rapid.OneOf(rapid.Uint64Range(0, 2000), rapid.Uint64()).Draw(t, "skip")
				s.Skip(k)
				h.Skip(k)
			case 3:
				ref := &model{items: h.items, weights: h.weights}
				next := drawRebuild(t, h.items, &nextItem, 4, 0, 3)
				nw := drawRebuildWeights(t, ref, next, false)
				e := entriesOf(next, nw)
				into := rapid.SampledFrom([]mode{modeLazy, modeAuto, modeRing}).Draw(t, "into")
				if s, err = NewFrom(s, e, withMode(into)); err != nil {
					t.Fatal(err)
				}
				h, _ = NewFrom(h, e, withMode(modeHeap))
				if s.tab == nil && len(next) > 1 {
					// Carried into a ring: back into a table.
					s, _ = NewFrom(s, e, withMode(modeLazy))
				}
				if s.tab == nil && len(next) > 1 {
					t.Fatalf("not a table: %v", s)
				}
			}
		}
	})
}

// TestTableMemory checks the table's size: at most tableBudget bits per
// entry, for the weight ranges it is meant for at every size, and that
// it is chosen for them.
func TestTableMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{2, 10, 100, 1000, 10000, 70000} {
		for _, rng := range [][2]uint32{{1, 100}, {63, 64}} {
			w := make([]uint32, n)
			for i := range w {
				w[i] = rng[0] + r.Uint32N(rng[1]-rng[0]+1)
			}
			s, _ := New(entriesOf(make([]int, n), w))
			if s.tab == nil {
				t.Fatalf("n=%d weights %d..%d: not a table: %v", n, rng[0], rng[1], s)
			}
			bytes := 8 * (len(s.tab.words) + len(s.tab.ready))
			if per := bytes / n; per > tableBudget/8+16 {
				t.Errorf("n=%d weights %d..%d: %d bytes per entry", n, rng[0], rng[1], per)
			}
		}
	}
}

// indices returns the items 0..n-1.
func indices(n int) []int {
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	return items
}

// TestTableCountsEveryPosition checks the counts NewFrom reads from a
// filled table (a chunk's first grid point, then the chunk's picks)
// against seek at every position of a period, for tables generated whole
// at build and filled by picks.
func TestTableCountsEveryPosition(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		n      int
		lo, hi uint32
	}{{37, 1, 100}, {300, 63, 64}, {200, 3, 4}, {12, 1, 300}} {
		w := make([]uint32, tc.n)
		for i := range w {
			w[i] = tc.lo + r.Uint32N(tc.hi-tc.lo+1)
		}
		s, _ := New(entriesOf(indices(tc.n), w))
		if s.tab == nil {
			t.Fatalf("n=%d weights %d..%d: not a table: %v", tc.n, tc.lo, tc.hi, s)
		}
		for range s.Period() {
			s.Pick()
		}
		got, want := make([]uint64, tc.n), make([]uint64, tc.n)
		for pos := uint64(1); pos < s.Period(); pos++ {
			clear(got)
			if !s.tab.counts(pos, got) {
				t.Fatalf("n=%d: position %d of a filled table: no counts", tc.n, pos)
			}
			seek(s.weights, s.maxW, pos, func(i int, c uint64) { want[i] = c })
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d weights %d..%d, position %d: counts %v, want %v", tc.n, tc.lo, tc.hi, pos, got, want)
			}
		}
	}
}
