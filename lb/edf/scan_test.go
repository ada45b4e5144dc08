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
