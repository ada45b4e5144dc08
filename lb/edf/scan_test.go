package edf

import (
	"testing"

	"pgregory.net/rapid"
)

// TestScanMatchesModel drives schedulers of 1 to 24 entries, on both
// sides of scanMaxN, against the reference model: picks, skips and
// NewFrom rebuilds that add and drop entries, so the carry-over goes from
// and to the scan generator, the bucket generator and the table. After
// every rebuild it checks that the scan generator is used exactly where
// useScan says.
func TestScanMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		huge := rapid.Bool().Draw(t, "huge")
		m := rapid.SampledFrom([]mode{modeAuto, modeRing, modeBuckets}).Draw(t, "mode")
		n := rapid.IntRange(1, 24).Draw(t, "n")
		items := make([]int, n)
		for i := range items {
			items[i] = i
		}
		entries := entriesOf(items, genWeights(t, n, huge))
		s, err := New(entries, withMode(m))
		if err != nil {
			t.Fatal(err)
		}
		ref := newModel(entries)
		nextItem := n
		checkScan(t, s, m)
		for range rapid.IntRange(1, 10).Draw(t, "steps") {
			switch rapid.SampledFrom([]string{"pick", "skip", "rebuild"}).Draw(t, "op") {
			case "pick":
				for i := range rapid.IntRange(1, 150).Draw(t, "picks") {
					if got, want := s.Pick(), ref.pick(); got != want {
						t.Fatalf("pick %d: got item %d, want %d (%v)", i, got, want, s)
					}
				}
			case "skip":
				k := rapid.IntRange(0, 150).Draw(t, "skip")
				s.Skip(uint64(k))
				for range k {
					ref.pick()
				}
			case "rebuild":
				items = drawRebuild(t, items, &nextItem, 3, 0, 10)
				entries = entriesOf(items, drawRebuildWeights(t, ref, items, huge))
				if s, err = NewFrom(s, entries, withMode(m)); err != nil {
					t.Fatal(err)
				}
				ref = ref.carryOver(entries)
				checkScan(t, s, m)
			}
		}
		for i := range 100 {
			if got, want := s.Pick(), ref.pick(); got != want {
				t.Fatalf("final pick %d: got item %d, want %d (%v)", i, got, want, s)
			}
		}
	})
}

// checkScan fails t unless s's ring uses the scan generator exactly when
// useScan allows it and m does not forbid it.
func checkScan(t *rapid.T, s *Scheduler[int], m mode) {
	if s.ring == nil {
		return
	}
	want := m != modeBuckets && useScan(len(s.items), s.maxW)
	if got := s.ring.gen.scan != nil; got != want {
		t.Fatalf("scan generator used: %v, want %v (%v, max reduced weight %d)", got, want, s, s.maxW)
	}
}

// TestScanLargestWeights checks the scan generator where its keys use the
// most bits (weights just below 2^scanMaxBits, alone or beside weight 1),
// across the end of a period, against the heap, and that one weight more
// goes to the bucket generator.
func TestScanLargestWeights(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, scanMaxN).Draw(t, "n")
		w := make([]uint32, n)
		for i := range w {
			w[i] = rapid.SampledFrom([]uint32{1, 2, 3, 1<<scanMaxBits - 1, 1<<scanMaxBits - 2, 1<<scanMaxBits - 3}).Draw(t, "w")
		}
		w[rapid.IntRange(0, n-1).Draw(t, "big")] = 1<<scanMaxBits - 1
		items := make([]int, n)
		for i := range items {
			items[i] = i
		}
		s, err := New(entriesOf(items, w), withMode(modeRing))
		if err != nil {
			t.Fatal(err)
		}
		if s.maxW == 1<<scanMaxBits-1 && s.ring.gen.scan == nil {
			t.Fatalf("largest weight %d: scan generator not used", s.maxW)
		}
		h, _ := New(entriesOf(items, w), withMode(modeHeap))
		// Skip to just before the end of the period, then pick across it
		// (the keys are renormalized there) and compare.
		skip := s.Period() - rapid.Uint64Range(1, 200).Draw(t, "beforeEnd")
		s.Skip(skip)
		h.Skip(skip)
		for i := range 500 {
			if got, want := s.Pick(), h.Pick(); got != want {
				t.Fatalf("pick %d after skipping %d: got %d, want %d (%v)", i, skip, got, want, s)
			}
		}
		// NewFrom reads the counts back from the scan generator.
		next, err := NewFrom(s, entriesOf(items, w), withMode(modeRing))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			if got, want := next.Pick(), h.Pick(); got != want {
				t.Fatalf("pick %d after NewFrom: got %d, want %d (%v)", i, got, want, next)
			}
		}
	})
	w := []uint32{1 << scanMaxBits, 1}
	s, _ := New(entriesOf([]int{0, 1}, w), withMode(modeRing))
	if s.ring.gen.scan != nil {
		t.Fatalf("weight 2^%d: scan generator used, want buckets", scanMaxBits)
	}
}
