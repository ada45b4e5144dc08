package edf

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// String makes failures readable.
func (m mode) String() string {
	switch m {
	case modeAuto:
		return "auto"
	case modeTable:
		return "table"
	case modeHeap:
		return "heap"
	case modeRing:
		return "ring"
	case modeBuckets:
		return "buckets"
	case modeLazy:
		return "lazy"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// genWeights draws weights of one of several shapes. Shapes whose period
// could be huge are only drawn when huge is true.
func genWeights(t *rapid.T, n int, huge bool) []uint32 {
	shapes := []string{"small", "equal", "scaled", "medium", "nearEqual"}
	if huge {
		shapes = append(shapes, "huge", "tail", "equalHuge")
	}
	shape := rapid.SampledFrom(shapes).Draw(t, "shape")
	w := make([]uint32, n)
	switch shape {
	case "small":
		for i := range w {
			w[i] = rapid.Uint32Range(1, 10).Draw(t, "w")
		}
	case "equal":
		x := rapid.Uint32Range(1, 1000).Draw(t, "w")
		for i := range w {
			w[i] = x
		}
	case "scaled":
		f := rapid.Uint32Range(2, 1000).Draw(t, "factor")
		for i := range w {
			w[i] = f * rapid.Uint32Range(1, 6).Draw(t, "w")
		}
	case "medium":
		for i := range w {
			w[i] = rapid.Uint32Range(1, 300).Draw(t, "w")
		}
	case "nearEqual":
		for i := range w {
			w[i] = rapid.Uint32Range(63, 64).Draw(t, "w")
		}
	case "huge":
		for i := range w {
			w[i] = rapid.Uint32Range(1, math.MaxUint32).Draw(t, "w")
		}
	case "tail": // heavy-tailed: mostly 1..3, now and then up to 2^32-1
		for i := range w {
			u := rapid.Float64Range(1e-12, 1).Draw(t, "u")
			w[i] = uint32(min(math.MaxUint32, math.Floor(math.Pow(u, -1/1.1))))
		}
	case "equalHuge": // equal large weights, one of them odd
		x := rapid.Uint32Range(1<<20, math.MaxUint32).Draw(t, "w")
		for i := range w {
			w[i] = x
		}
		w[rapid.IntRange(0, n-1).Draw(t, "odd")] = rapid.Uint32Range(1, math.MaxUint32).Draw(t, "oddW")
	}
	return w
}

// drawModelCase draws weights and an implementation and returns a
// scheduler over items 0..n-1, n in [minN, maxN], and its reference model.
func drawModelCase(t *rapid.T, minN, maxN int) (s *Scheduler[int], ref *model, huge bool, m mode) {
	huge = rapid.Bool().Draw(t, "huge")
	m = genMode(t, huge)
	n := rapid.IntRange(minN, maxN).Draw(t, "n")
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	entries := entriesOf(items, genWeights(t, n, huge))
	s, err := New(entries, withMode(m))
	if err != nil {
		t.Fatal(err)
	}
	return s, newModel(entries), huge, m
}

// drawRebuild draws the items of a rebuild from items: a random subset
// (each kept unless a draw from 0..keepOdds gives 0) in a random order,
// then newMin..newMax new items numbered from *nextItem, at least one item
// in all.
func drawRebuild(t *rapid.T, items []int, nextItem *int, keepOdds, newMin, newMax int) []int {
	var next []int
	for _, it := range rapid.Permutation(items).Draw(t, "order") {
		if rapid.IntRange(0, keepOdds).Draw(t, "keep") > 0 {
			next = append(next, it)
		}
	}
	for range rapid.IntRange(newMin, newMax).Draw(t, "new") {
		next = append(next, *nextItem)
		*nextItem++
	}
	if len(next) == 0 {
		next = append(next, *nextItem)
		*nextItem++
	}
	return next
}

// drawRebuildWeights draws weights for items, keeping ref's weights of the
// old items if sameWeights is drawn.
func drawRebuildWeights(t *rapid.T, ref *model, items []int, huge bool) []uint32 {
	w := genWeights(t, len(items), huge)
	if rapid.Bool().Draw(t, "sameWeights") {
		for i, it := range items {
			if j := slices.Index(ref.items, it); j >= 0 {
				w[i] = ref.weights[j]
			}
		}
	}
	return w
}

func entriesOf(items []int, w []uint32) []Entry[int] {
	e := make([]Entry[int], len(items))
	for i := range e {
		e[i] = Entry[int]{Item: items[i], Weight: w[i]}
	}
	return e
}

func genMode(t *rapid.T, huge bool) mode {
	if huge {
		return rapid.SampledFrom([]mode{modeAuto, modeHeap, modeRing, modeBuckets}).Draw(t, "mode")
	}
	return rapid.SampledFrom([]mode{modeAuto, modeTable, modeHeap, modeRing, modeBuckets, modeLazy}).Draw(t, "mode")
}

// TestMatchesModel checks that the pick sequence equals the reference
// model's for any weights, with skips and carry-over rebuilds in between.
func TestMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, ref, huge, m := drawModelCase(t, 1, 8)
		items, nextItem := ref.items, len(ref.items)
		var entries []Entry[int]
		var err error
		steps := rapid.IntRange(1, 12).Draw(t, "steps")
		for range steps {
			switch rapid.SampledFrom([]string{"pick", "skip", "rebuild"}).Draw(t, "op") {
			case "pick":
				k := rapid.IntRange(1, 60).Draw(t, "picks")
				for i := range k {
					if got, want := s.Pick(), ref.pick(); got != want {
						t.Fatalf("pick %d: got item %d, want %d (%v)", i, got, want, s)
					}
				}
			case "skip":
				k := rapid.IntRange(0, 60).Draw(t, "skip")
				s.Skip(uint64(k))
				for range k {
					ref.pick()
				}
			case "rebuild":
				items = drawRebuild(t, items, &nextItem, 3, 0, 2)
				entries = entriesOf(items, drawRebuildWeights(t, ref, items, huge))
				s, err = NewFrom(s, entries, withMode(m))
				if err != nil {
					t.Fatal(err)
				}
				ref = ref.carryOver(entries)
			}
		}
	})
}

// TestRebuildSameEntriesContinues checks that NewFrom with unchanged entries
// continues exactly where the previous scheduler stands.
func TestRebuildSameEntriesContinues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		huge := rapid.Bool().Draw(t, "huge")
		n := rapid.IntRange(1, 10).Draw(t, "n")
		entries := make([]Entry[int], n)
		for i, w := range genWeights(t, n, huge) {
			entries[i] = Entry[int]{Item: i, Weight: w}
		}
		m1, m2 := genMode(t, huge), genMode(t, huge)
		a, _ := New(entries, withMode(m1))
		b, _ := New(entries, withMode(m2))
		skip := rapid.Uint64().Draw(t, "skip")
		a.Skip(skip)
		b.Skip(skip)
		for range 20 {
			b, _ = NewFrom(b, entries, withMode(m2))
			for range rapid.IntRange(0, 7).Draw(t, "k") {
				if x, y := a.Pick(), b.Pick(); x != y {
					t.Fatalf("got %d after rebuild, want %d", y, x)
				}
			}
		}
	})
}

// TestExactPerPeriod checks that every run of Period picks, after skipping
// any number of picks (including well past 2^32 and 2^64), returns each
// entry exactly weight/gcd times.
func TestExactPerPeriod(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genMode(t, false)
		n := rapid.IntRange(1, 20).Draw(t, "n")
		w := genWeights(t, n, false)
		items := make([]int, n)
		for i := range items {
			items[i] = i
		}
		s, err := New(entriesOf(items, w), withMode(m))
		if err != nil {
			t.Fatal(err)
		}
		var g uint32
		for _, x := range w {
			g = gcd(g, x)
		}
		skips := rapid.SliceOfN(rapid.SampledFrom([]uint64{
			1, 7, 1 << 32, 1<<32 + 1, 3 << 40, math.MaxUint64, math.MaxUint64 - 1, s.Period() - 1,
		}), 0, 4).Draw(t, "skips")
		for _, k := range skips {
			s.Skip(k)
		}
		if p := s.Period(); p > 20000 {
			t.Skip("period too long for this test")
		}
		for range 2 {
			counts := make([]uint64, n)
			for range s.Period() {
				counts[s.Pick()]++
			}
			for i := range counts {
				if counts[i] != uint64(w[i]/g) {
					t.Fatalf("entry %d (weight %d): picked %d times in a period of %d, want %d",
						i, w[i], counts[i], s.Period(), w[i]/g)
				}
			}
		}
	})
}

// TestSkipEqualsPicks checks Skip(k) against k picks, for both
// implementations, and that skipping in parts equals skipping at once.
func TestSkipEqualsPicks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		huge := rapid.Bool().Draw(t, "huge")
		m := genMode(t, huge)
		n := rapid.IntRange(1, 10).Draw(t, "n")
		entries := make([]Entry[int], n)
		for i, w := range genWeights(t, n, huge) {
			entries[i] = Entry[int]{Item: i, Weight: w}
		}
		a, _ := New(entries, withMode(m))
		b, _ := New(entries, withMode(m))
		c, _ := New(entries, withMode(m))
		x := rapid.Uint64Range(0, 2000).Draw(t, "x")
		y := rapid.Uint64().Draw(t, "y")
		for range x {
			a.Pick()
		}
		a.Skip(y)
		b.Skip(x)
		b.Skip(y)
		c.Skip(x + y) // may wrap around 2^64: then c differs, so compare only if not
		for i := range 50 {
			pa, pb := a.Pick(), b.Pick()
			if pa != pb {
				t.Fatalf("pick %d: picks then Skip gave %d, Skip twice gave %d", i, pa, pb)
			}
			if pc := c.Pick(); x+y >= x && pc != pa {
				t.Fatalf("pick %d: Skip(%d) gave %d, want %d", i, x+y, pc, pa)
			}
		}
	})
}

// TestSeekInvertsPosition checks the position arithmetic directly, for
// weights up to 2^32-1.
func TestSeekInvertsPosition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 10).Draw(t, "n")
		w := genWeights(t, n, true)
		var g uint32
		for _, x := range w {
			g = gcd(g, x)
		}
		var period uint64
		var maxW uint32
		for i := range w {
			w[i] /= g
			period += uint64(w[i])
			maxW = max(maxW, w[i])
		}
		pos := rapid.Uint64Range(1, period).Draw(t, "pos")
		consumed := make([]uint64, n)
		a, b, last := seek(w, maxW, pos, func(i int, n uint64) { consumed[i] = n })
		if a == 0 || a > b || a*uint64(w[last])%b != 0 {
			t.Fatalf("seek(%d) = %d/%d at entry %d", pos, a, b, last)
		}
		var sum uint64
		for i, c := range consumed {
			sum += c
			if c > uint64(w[i]) {
				t.Fatalf("entry %d: %d consumed, weight %d", i, c, w[i])
			}
		}
		if sum != pos {
			t.Fatalf("consumed sums to %d, want %d", sum, pos)
		}
		if got := positionAt(w, a, b, last, nil); got != pos {
			t.Fatalf("positionAt(seek(%d)) = %d", pos, got)
		}
	})
}

// deviation returns count*W - N*w: W times the deviation of the count of an
// entry of weight w from its share after N picks.
func deviation(count, picks, w, total uint64) int64 {
	return int64(count*total) - int64(picks*w)
}

// TestDeviationBound checks the bounds stated in the package doc, exactly:
// from the start of the schedule, for every prefix of N picks,
// -(W - w_i) <= count_i*W - N*w_i <= (n-1)*w_i, and in every window of N
// consecutive picks starting anywhere, |count_i*W - N*w_i| <= W + (n-2)*w_i.
func TestDeviationBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "n")
		w := genWeights(t, n, false)
		m := genMode(t, false)
		var total uint64
		for _, x := range w {
			total += uint64(x)
		}
		items := make([]int, n)
		for i := range items {
			items[i] = i
		}
		start := rapid.Uint64().Draw(t, "start")
		fresh, _ := New(entriesOf(items, w), withMode(m))
		moved, _ := New(entriesOf(items, w), withMode(m))
		moved.Skip(start)
		limit := min(2*fresh.Period(), 3000)
		cf := make([]uint64, n)
		cm := make([]uint64, n)
		for k := uint64(1); k <= limit; k++ {
			cf[fresh.Pick()]++
			cm[moved.Pick()]++
			for i := range n {
				wi := uint64(w[i])
				d := deviation(cf[i], k, wi, total)
				if d < -int64(total-wi) || d > int64(uint64(n-1)*wi) {
					t.Fatalf("after %d picks entry %d (weight %d of %d) was picked %d times: outside the prefix bound",
						k, i, wi, total, cf[i])
				}
				d = deviation(cm[i], k, wi, total)
				if bound := int64(total) + (int64(n)-2)*int64(wi); d > bound || -d > bound {
					t.Fatalf("window of %d picks from %d: entry %d (weight %d of %d) picked %d times: outside the window bound",
						k, start, i, wi, total, cm[i])
				}
			}
		}
	})
}

// TestTieBreakFIFO checks the order among equal deadlines.
func TestTieBreakFIFO(t *testing.T) {
	for _, m := range []mode{modeTable, modeHeap, modeLazy} {
		t.Run(m.String(), func(t *testing.T) {
			// Equal weights are round robin in index order.
			rr, _ := New(entriesOf([]int{10, 11, 12, 13, 14}, []uint32{7, 7, 7, 7, 7}), withMode(m))
			for i := range 23 {
				if got, want := rr.Pick(), 10+i%5; got != want {
					t.Fatalf("equal weights, pick %d: got %d, want %d", i, got, want)
				}
			}
			// Deadlines 1/4 | 1/2 1/2 1/2 | 3/4 | 1 1 1 for weights 2, 4, 2:
			// ties go to the lower index.
			s, _ := New(entriesOf([]int{0, 1, 2}, []uint32{2, 4, 2}), withMode(m))
			want := []int{1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2}
			var got []int
			for range want {
				got = append(got, s.Pick())
			}
			if !slices.Equal(got, want) {
				t.Fatalf("weights 2,4,2: got %v, want %v", got, want)
			}
		})
	}
}

func TestInvalidInput(t *testing.T) {
	if _, err := New[int](nil); !errors.Is(err, ErrNoEntries) {
		t.Errorf("New(nil): got %v, want ErrNoEntries", err)
	}
	_, err := New([]Entry[string]{{"a", 1}, {"b", 3}, {"c", 0}, {"d", 0}})
	var ee *EntryError
	if !errors.As(err, &ee) || ee.Index != 2 || !errors.Is(err, ErrZeroWeight) {
		t.Fatalf("weight 0: got %v, want an EntryError for index 2 wrapping ErrZeroWeight", err)
	}
	if got, want := err.Error(), "edf: entry 2: weight is 0"; got != want {
		t.Errorf("got message %q, want %q", got, want)
	}
	prev, _ := New([]Entry[any]{{1, 1}, {2, 1}})
	_, err = NewFrom(prev, []Entry[any]{{1, 1}, {[]int{1}, 1}})
	if !errors.As(err, &ee) || ee.Index != 1 || !errors.Is(err, ErrIncomparableItem) {
		t.Fatalf("slice item: got %v, want an EntryError for index 1 wrapping ErrIncomparableItem", err)
	}
	prev, _ = New([]Entry[any]{{1, 1}, {[]int{1}, 1}})
	if _, err = NewFrom(prev, []Entry[any]{{1, 1}}); !errors.Is(err, ErrIncomparableItem) {
		t.Fatalf("slice item in prev: got %v, want ErrIncomparableItem", err)
	}
	if _, err = NewFrom(prev, nil); !errors.Is(err, ErrNoEntries) {
		t.Fatalf("NewFrom(prev, nil): got %v, want ErrNoEntries", err)
	}
}

func TestZeroScheduler(t *testing.T) {
	var s Scheduler[string]
	if got := s.Pick(); got != "" {
		t.Errorf("zero Scheduler Pick() = %q, want \"\"", got)
	}
	s.Skip(3)
	if s.Len() != 0 || s.Period() != 0 {
		t.Errorf("zero Scheduler: Len %d Period %d, want 0 0", s.Len(), s.Period())
	}
	n, err := NewFrom(&s, []Entry[string]{{"a", 1}})
	if err != nil || n.Pick() != "a" {
		t.Fatalf("NewFrom(zero, a): %v %v", n, err)
	}
	if got, want := n.String(), "edf(n=1 period=1 pos=0 single)[a:1]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestString(t *testing.T) {
	s, _ := New([]Entry[string]{{"a", 30}, {"b", 20}, {"c", 10}})
	s.Pick()
	if got, want := s.String(), "edf(n=3 period=6 pos=1 table)[a:30 b:20 c:10]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	h, _ := New([]Entry[string]{{"a", 3}, {"b", 2}}, withMode(modeHeap))
	if got, want := h.String(), "edf(n=2 period=5 pos=0 heap)[a:3 b:2]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestRandomStart checks that over many seeds the first pick lands on each
// entry with frequency within 0.02 (absolute) of weight/W, and that a random
// start is a rotation of the deterministic schedule.
func TestRandomStart(t *testing.T) {
	w := []uint32{1, 2, 3, 10, 30, 54}
	const seeds = 20000
	for _, m := range []mode{modeTable, modeHeap, modeLazy} {
		t.Run(m.String(), func(t *testing.T) {
			items := []int{0, 1, 2, 3, 4, 5}
			counts := make([]int, len(w))
			for seed := range uint64(seeds) {
				s, err := New(entriesOf(items, w), withMode(m), WithRandomStart(rand.New(rand.NewPCG(seed, 1))))
				if err != nil {
					t.Fatal(err)
				}
				counts[s.Pick()]++
			}
			for i, c := range counts {
				got, want := float64(c)/seeds, float64(w[i])/100
				if math.Abs(got-want) > 0.02 {
					t.Errorf("entry %d: first pick in %.4f of %d starts, want %.4f±0.02", i, got, seeds, want)
				}
			}
			// A random start is the fixed schedule rotated.
			fixed, _ := New(entriesOf(items, w), withMode(m))
			r, _ := New(entriesOf(items, w), withMode(m), WithRandomStart(nil))
			var a, b []int
			for range 2 * fixed.Period() {
				a = append(a, fixed.Pick())
				b = append(b, r.Pick())
			}
			found := false
			for k := range int(fixed.Period()) {
				if slices.Equal(a[k:k+int(fixed.Period())], b[:fixed.Period()]) {
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("random start %v is not a rotation of %v", b, a)
			}
		})
	}
}

// TestManyEntries covers the table with 32-bit slots (more than 2^16
// entries) against the heap.
func TestManyEntries(t *testing.T) {
	const n = 1<<16 + 1000
	r := rand.New(rand.NewPCG(3, 4))
	w := make([]uint32, n)
	items := make([]int, n)
	for i := range w {
		w[i], items[i] = 1+r.Uint32N(3), i
	}
	s, _ := New(entriesOf(items, w))
	h, _ := New(entriesOf(items, w), withMode(modeHeap))
	if s.tab == nil || s.tab.bits != 17 {
		t.Fatalf("got %v, want a table with 17-bit slots", s)
	}
	s.Skip(1<<32 + 5)
	h.Skip(1<<32 + 5)
	counts := make([]uint32, n)
	for i := range s.Period() {
		x := s.Pick()
		if i < 5000 {
			if y := h.Pick(); x != y {
				t.Fatalf("pick %d: table gave %d, heap gave %d", i, x, y)
			}
		}
		counts[x]++
	}
	for i := range counts {
		if counts[i] != w[i] {
			t.Fatalf("entry %d: %d picks in a period, want %d", i, counts[i], w[i])
		}
	}
}

// TestLazyTable checks that schedules of at most 16 entries with a period
// of 4 to 128 picks per entry use the lazily filled table, that it gives
// the heap's sequence over several periods (from position 0 and after a
// random start), and that its generator's state is dropped once the period
// is full.
func TestLazyTable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name   string
		lo, hi uint32
		n      int
	}{{"63..64", 63, 64, 10}, {"1..100", 1, 100, 10}, {"1..100/16", 1, 100, 16}, {"5,9", 5, 9, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			w := make([]uint32, tc.n)
			items := make([]int, tc.n)
			for i := range w {
				w[i], items[i] = tc.lo+r.Uint32N(tc.hi-tc.lo+1), i
			}
			if tc.n == 2 {
				w[0], w[1] = tc.lo, tc.hi
			}
			for _, start := range []uint64{0, 1 + r.Uint64N(50)} {
				s, err := New(entriesOf(items, w))
				if err != nil {
					t.Fatal(err)
				}
				if s.tab == nil || s.tab.missing == 0 {
					t.Fatalf("weights %v (period %d): not a lazily filled table: %v", w, s.Period(), s)
				}
				h, _ := New(entriesOf(items, w), withMode(modeHeap))
				s.Skip(start)
				h.Skip(start)
				for k := range 3 * s.Period() {
					if got, want := s.Pick(), h.Pick(); got != want {
						t.Fatalf("weights %v, start %d, pick %d: got %d, want %d", w, start, k, got, want)
					}
				}
				if s.tab.missing != 0 || s.tab.gen.e != nil || s.tab.buf != nil {
					t.Errorf("weights %v: generator state kept after the period was filled", w)
				}
			}
		})
	}
}

// TestLazyTableCounts checks the counts NewFrom reads from a lazy table,
// from the table or by a seek, against seek, with the table empty, partly
// filled and full, at positions around the table-counting limit of 4n.
func TestLazyTableCounts(t *testing.T) {
	w := []uint32{64, 63, 63, 64, 63, 64, 64, 63, 63, 64}
	items := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	n := uint64(len(w))
	for _, picked := range []uint64{0, 17, 300, 635} {
		for _, pos := range []uint64{0, 1, 4*n - 1, 4 * n, 4*n + 1, 299, 300, 301, 634} {
			s, _ := New(entriesOf(items, w))
			if s.tab == nil {
				t.Fatalf("not a table: %v", s)
			}
			for range picked {
				s.Pick()
			}
			s.Skip(pos + s.Period() - picked%s.Period())
			got := make([]uint64, n)
			if p := s.counts(got); p != pos {
				t.Fatalf("after %d picks: counts at position %d, want %d", picked, p, pos)
			}
			want := make([]uint64, n)
			if pos != 0 {
				seek(s.weights, s.maxW, pos, func(i int, c uint64) { want[i] = c })
			}
			if !slices.Equal(got, want) {
				t.Errorf("after %d picks, position %d: counts %v, want %v", picked, pos, got, want)
			}
		}
	}
}
