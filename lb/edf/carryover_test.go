package edf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"
)

// shareError rebuilds the scheduler every k picks with rebuild, for picks
// picks in total, and returns the largest relative error of an entry's
// share: max over i of |count_i/picks - w_i/W| / (w_i/W).
func shareError(w []uint32, k, picks int, rebuild func(prev *Scheduler[int], e []Entry[int]) *Scheduler[int]) (worst float64, starved int) {
	items := make([]int, len(w))
	for i := range items {
		items[i] = i
	}
	entries := entriesOf(items, w)
	var total float64
	for _, x := range w {
		total += float64(x)
	}
	s := rebuild(nil, entries)
	counts := make([]int, len(w))
	for n := 0; n < picks; n++ {
		if n > 0 && n%k == 0 {
			s = rebuild(s, entries)
		}
		counts[s.Pick()]++
	}
	for i, c := range counts {
		want := float64(w[i]) / total
		worst = max(worst, math.Abs(float64(c)/float64(picks)-want)/want)
		if c == 0 {
			starved++
		}
	}
	return worst, starved
}

var rebuildKs = []int{1, 2, 3, 5, 10, 17, 100, 1000}

// carriedOver rebuilds with NewFrom.
func carriedOver(prev *Scheduler[int], e []Entry[int]) *Scheduler[int] {
	s, err := NewFrom(prev, e)
	if err != nil {
		panic(err)
	}
	return s
}

// naive rebuilds from scratch, as a policy without carry-over would.
func naive(_ *Scheduler[int], e []Entry[int]) *Scheduler[int] {
	s, err := New(e)
	if err != nil {
		panic(err)
	}
	return s
}

func fairnessWeights() [][]uint32 {
	r := rand.New(rand.NewPCG(7, 7))
	random := make([]uint32, 10)
	for i := range random {
		random[i] = 1 + r.Uint32N(100) // 1..100, fixed seed
	}
	return [][]uint32{
		{100, 50, 20, 10, 5, 3, 1, 1},
		{1, 1, 1, 1, 2},
		random,
	}
}

// TestRebuildKeepsShares checks that rebuilding with NewFrom after every k
// picks (weights unchanged) keeps every entry's long-run share within 1%
// (relative) of weight/W. With unchanged entries NewFrom continues the
// schedule exactly, so over whole periods the error is 0.
func TestRebuildKeepsShares(t *testing.T) {
	for _, w := range fairnessWeights() {
		for _, k := range rebuildKs {
			t.Run(fmt.Sprintf("w=%v/k=%d", w, k), func(t *testing.T) {
				s, _ := New(entriesOf(make([]int, len(w)), w))
				picks := int(s.Period()) * 20
				if e, _ := shareError(w, k, picks, carriedOver); e > 0.01 {
					t.Errorf("relative share error %.4f, want <= 0.01", e)
				}
			})
		}
	}
}

// TestRebuildShuffledKeepsShares is TestRebuildKeepsShares with the entry
// list in a new random order at every rebuild: ties at the carried-over
// point are then decided by the new order, and the shares still hold.
func TestRebuildShuffledKeepsShares(t *testing.T) {
	for _, w := range fairnessWeights() {
		for _, k := range rebuildKs {
			t.Run(fmt.Sprintf("w=%v/k=%d", w, k), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(k), 3))
				shuffled := func(prev *Scheduler[int], e []Entry[int]) *Scheduler[int] {
					e = append([]Entry[int](nil), e...)
					r.Shuffle(len(e), func(i, j int) { e[i], e[j] = e[j], e[i] })
					return carriedOver(prev, e)
				}
				s, _ := New(entriesOf(make([]int, len(w)), w))
				picks := int(s.Period()) * 20
				if e, _ := shareError(w, k, picks, shuffled); e > 0.01 {
					t.Errorf("relative share error %.4f, want <= 0.01", e)
				}
			})
		}
	}
}

// TestNaiveRebuildIsUnfair shows why NewFrom exists: rebuilding from scratch
// every k picks restarts the schedule, whose first picks favour heavy
// entries, and light entries starve. Measured for weights
// {100 50 20 10 5 3 1 1} over 20 periods (3800 picks); the relative share
// error is max over i of |share_i - w_i/W| / (w_i/W), 1.00 meaning some
// entry got nothing:
//
//	k     error  entries never picked
//	1     1.00   7 of 8 (only weight 100)
//	2     1.00   7 of 8
//	3     1.00   6 of 8
//	5     1.00   6 of 8
//	10    1.00   5 of 8
//	17    1.00   5 of 8
//	100   1.00   2 of 8
//	1000  0.05   0 of 8
//
// With NewFrom the error is 0.00 for every k (TestRebuildKeepsShares).
func TestNaiveRebuildIsUnfair(t *testing.T) {
	w := fairnessWeights()[0]
	for _, k := range rebuildKs {
		s, _ := New(entriesOf(make([]int, len(w)), w))
		picks := int(s.Period()) * 20
		e, starved := shareError(w, k, picks, naive)
		t.Logf("k=%d: relative share error %.2f, %d of %d entries never picked", k, e, starved, len(w))
		if k <= 100 && e <= 0.01 {
			t.Errorf("k=%d: naive rebuild has relative share error %.4f, expected it to exceed 0.01", k, e)
		}
	}
	// k = 1: every pick is the first pick of a fresh schedule.
	s := naive(nil, entriesOf([]int{0, 1, 2}, []uint32{1, 5, 2}))
	for range 100 {
		if got := naive(s, entriesOf([]int{0, 1, 2}, []uint32{1, 5, 2})).Pick(); got != 1 {
			t.Fatalf("naive rebuild picked %d, want the heaviest entry 1", got)
		}
	}
}

// TestCarryOrderModel checks carryOrder against its definition, with
// duplicate items and with lists long enough for the map: items of prev in
// the order of their first occurrence in prev, then new items, each group
// in the order given; from and first name first occurrences. It calls
// carryOrder twice with the same distinctness flag, as NewFrom does for
// two calls from one scheduler, so that the second call may take the
// path that hashes nothing (prev's items known distinct, the same items
// in the same order); the flag it learns and the distinctness it reports
// for entries are checked too.
func TestCarryOrderModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]int{5, 60, 1000}).Draw(t, "alphabet")
		item := rapid.IntRange(0, alphabet)
		minLen := rapid.SampledFrom([]int{1, 20}).Draw(t, "minLen") // 20*20 > linearCarry
		prev := rapid.SliceOfN(item, minLen, 60).Draw(t, "prev")
		next := slices.Clone(prev)
		if !rapid.Bool().Draw(t, "sameItems") {
			next = rapid.SliceOfN(item, minLen, 60).Draw(t, "next")
		}
		entries := make([]Entry[int], len(next))
		for k, x := range next {
			entries[k] = Entry[int]{Item: x, Weight: uint32(k + 1)}
		}
		distinct := func(items []int) uint32 {
			for a := range items {
				if slices.Index(items, items[a]) != a {
					return distinctNo
				}
			}
			return distinctYes
		}
		var flag atomic.Uint32
		flag.Store(rapid.SampledFrom([]uint32{distinctUnknown, distinct(prev)}).Draw(t, "known"))
		for call := range 2 {
			c, err := carryOrder(prev, &flag, entries)
			if err != nil {
				t.Fatal(err)
			}
			key := func(x int) int {
				if i := slices.Index(prev, x); i >= 0 {
					return i
				}
				return len(prev)
			}
			want := slices.Clone(entries)
			slices.SortStableFunc(want, func(x, y Entry[int]) int { return key(x.Item) - key(y.Item) })
			if !slices.Equal(c.entries, want) {
				t.Fatalf("call %d: order %v, want %v", call, c.entries, want)
			}
			for k, e := range c.entries {
				if w := slices.Index(prev, e.Item); int(c.fromOf(k)) != w {
					t.Fatalf("call %d: from[%d] = %d, want %d", call, k, c.fromOf(k), w)
				}
			}
			for i, x := range prev {
				if got, w := c.first(i), slices.Index(prev, x); int(got) != w {
					t.Fatalf("call %d: first(%d) = %d, want %d", call, i, got, w)
				}
			}
			if got := flag.Load(); got != distinctUnknown && got != distinct(prev) {
				t.Fatalf("call %d: prev's items learned as distinctness %d, want %d", call, got, distinct(prev))
			}
			if w := distinct(next); c.distinct != w {
				t.Fatalf("call %d: entries' distinctness %d, want %d", call, c.distinct, w)
			}
		}
	})
}

// TestNewFromLargeMatchesModel is TestMatchesModel's rebuild step for
// lists long enough that NewFrom matches items with a map (and the ring
// reads its counts from blocks of 64 picks and more): the picks after
// each NewFrom equal the model's.
func TestNewFromLargeMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, ref, huge, m := drawModelCase(t, 17, 40)
		items, nextItem := ref.items, len(ref.items)
		var entries []Entry[int]
		var err error
		for range rapid.IntRange(1, 3).Draw(t, "rebuilds") {
			for i := range rapid.IntRange(0, 300).Draw(t, "picks") {
				if got, want := s.Pick(), ref.pick(); got != want {
					t.Fatalf("pick %d: got item %d, want %d (%v)", i, got, want, s)
				}
			}
			items = drawRebuild(t, items, &nextItem, 7, 1, 3)
			entries = entriesOf(items, drawRebuildWeights(t, ref, items, huge))
			if s, err = NewFrom(s, entries, withMode(m)); err != nil {
				t.Fatal(err)
			}
			ref = ref.carryOver(entries)
		}
		for i := range 100 {
			if got, want := s.Pick(), ref.pick(); got != want {
				t.Fatalf("pick %d after the last rebuild: got item %d, want %d (%v)", i, got, want, s)
			}
		}
	})
}
