package edf

import (
	"errors"
	"slices"
	"testing"
)

// FuzzNew builds schedulers from arbitrary weights: one weight per byte,
// multiplied by scale (so 0 bytes are invalid entries and a large scale
// gives long periods). It checks that New never panics, reports the first
// zero weight by index, and otherwise that both implementations agree,
// every period is exact after skipping, and the prefix deviation bound
// holds.
func FuzzNew(f *testing.F) {
	f.Add([]byte{3, 2, 1}, uint32(1), uint64(0))
	f.Add([]byte{}, uint32(1), uint64(0))
	f.Add([]byte{1, 0, 2}, uint32(1), uint64(5))
	f.Add([]byte{7, 7, 7, 7}, uint32(1000), uint64(1<<40))
	f.Fuzz(func(t *testing.T, data []byte, scale uint32, skip uint64) {
		if len(data) > 64 {
			data = data[:64]
		}
		scale = max(scale, 1)
		entries := make([]Entry[int], len(data))
		firstZero := -1
		for i, b := range data {
			entries[i] = Entry[int]{Item: i, Weight: uint32(b) * scale}
			if entries[i].Weight == 0 && firstZero < 0 {
				firstZero = i
			}
		}
		a, errA := New(entries)
		h, errH := New(entries, withMode(modeHeap))
		switch {
		case len(data) == 0:
			if !errors.Is(errA, ErrNoEntries) || !errors.Is(errH, ErrNoEntries) {
				t.Fatalf("no entries: got %v, %v", errA, errH)
			}
			return
		case firstZero >= 0:
			var ee *EntryError
			if !errors.As(errA, &ee) || ee.Index != firstZero || !errors.Is(errA, ErrZeroWeight) || errH == nil {
				t.Fatalf("zero weight at %d: got %v, %v", firstZero, errA, errH)
			}
			return
		case errA != nil || errH != nil:
			t.Fatalf("valid entries: got %v, %v", errA, errH)
		}
		var total uint64
		var g uint32
		for _, e := range entries {
			total += uint64(e.Weight)
			g = gcd(g, e.Weight)
		}
		if a.Period() != total/uint64(g) || h.Period() != a.Period() || a.Len() != len(data) {
			t.Fatalf("period %d, %d, len %d; want %d, %d", a.Period(), h.Period(), a.Len(), total/uint64(g), len(data))
		}
		// From the start: the prefix bound, and both implementations agree.
		n := uint64(len(data))
		limit := min(a.Period(), 4000)
		counts := make([]uint64, n)
		for k := uint64(1); k <= limit; k++ {
			x, y := a.Pick(), h.Pick()
			if x != y {
				t.Fatalf("pick %d: table/auto gave %d, heap gave %d", k, x, y)
			}
			counts[x]++
			for i, c := range counts {
				w := uint64(entries[i].Weight)
				d := deviation(c, k, w, total)
				if d < -int64(total-w) || d > int64((n-1)*w) {
					t.Fatalf("after %d picks entry %d was picked %d times: outside the prefix bound", k, i, c)
				}
			}
		}
		// After any skip: whole periods are exact.
		if a.Period() > 4000 {
			return
		}
		a.Skip(skip)
		counts = make([]uint64, n)
		var seq []int
		for range a.Period() {
			x := a.Pick()
			seq = append(seq, x)
			counts[x]++
		}
		for i, c := range counts {
			if c != uint64(entries[i].Weight/g) {
				t.Fatalf("entry %d: %d picks in a period after Skip(%d), want %d", i, c, skip, entries[i].Weight/g)
			}
		}
		// Carrying over to the same entries continues the same sequence.
		b, err := NewFrom(a, slices.Clone(entries))
		if err != nil {
			t.Fatal(err)
		}
		for i := range seq {
			if x, y := a.Pick(), b.Pick(); x != y {
				t.Fatalf("pick %d after NewFrom: got %d, want %d", i, y, x)
			}
		}
	})
}
