package consistenthash

import (
	"flag"
	"fmt"
	"slices"
	"testing"
)

var long = flag.Bool("long", false, "measure disruption as docs/performance.md does (make stress): 100,000 keys, 20 changes, and the large tables, entriesPerWeight at n = 1,000 and Maglev's of 655,373")

// owners maps each of keys hashes (splitmix64 of 1, 2, ...: a linear
// sequence would line up with the Maglev permutations, which are linear
// too) to the hash key of its endpoint in tab.
func owners(tab table, nodes []ringNode, keys int) []string {
	out := make([]string, keys)
	for k := range out {
		h := mix(uint64(k+1) * golden)
		out[k] = nodes[tab.slots[tab.first(h)]].hashKey
	}
	return out
}

// nodesN returns n endpoints of weight 1.
func nodesN(n int) []ringNode {
	nodes := make([]ringNode, n)
	for i, a := range addrsN(n) {
		nodes[i] = ringNode{hashKey: a, weight: 1}
	}
	return nodes
}

// layout is one way of placing keys, as TestDisruptionAndSpread and
// TestSpread measure it.
type layout struct {
	name  string
	build func([]ringNode) table
	// longFrom is the n from which the layout is measured only with -long
	// (each takes seconds under -race); 0: none.
	longFrom int
}

// layouts returns the tables measured: A42's default ring, the ring of
// entriesPerWeight 100 (whose maximum, 200,000 entries, holds n = 1,000
// with room for additions), and Maglev's default and ten times larger
// tables.
func layouts() []layout {
	return []layout{
		{"ring", func(n []ringNode) table { return buildRing(n, DefaultMinRingSize, DefaultMaxRingSize) }, 0},
		{"ring/entriesPerWeight=100", func(n []ringNode) table {
			tab, tooBig := buildFixedRing(n, 100, DefaultMinRingSize, 200_000)
			if tooBig != nil {
				panic(tooBig) // the layout would be A42's ring
			}
			return tab
		}, 1000},
		{"maglev/65537", func(n []ringNode) table { return buildMaglev(n, DefaultMaglevTableSize) }, 0},
		{"maglev/655373", func(n []ringNode) table { return buildMaglev(n, 655_373) }, 10},
	}
}

// disruption is what changes of one of n endpoints move, each averaged
// over the changes made, as a ratio to the ideal share (1/n for a
// removal, 1/(n+1) for an addition); between is the share of the keys
// that moved from one staying endpoint to another, per change.
type disruption struct{ removed, added, between float64 }

// measureDisruption removes, one at a time, changes endpoints spread over
// n and adds as many new ones, and counts the keys (of keys) whose
// endpoint changed.
func measureDisruption(build func([]ringNode) table, n, changes, keys int) disruption {
	nodes := nodesN(n + changes)
	base := nodes[:n]
	before := owners(build(base), base, keys)
	var d disruption
	for c := range changes {
		gone := base[c*n/changes].hashKey
		rest := slices.DeleteFunc(slices.Clone(base), func(nd ringNode) bool { return nd.hashKey == gone })
		for k, o := range owners(build(rest), rest, keys) {
			if o != before[k] {
				d.removed++
				if before[k] != gone {
					d.between++
				}
			}
		}
		more := append(slices.Clone(base), nodes[n+c])
		for k, o := range owners(build(more), more, keys) {
			if o != before[k] {
				d.added++
				if o != nodes[n+c].hashKey {
					d.between++
				}
			}
		}
	}
	per := float64(changes) * float64(keys)
	return disruption{removed: d.removed / per * float64(n), added: d.added / per * float64(n+1), between: d.between / per / 2}
}

// TestDisruptionAndSpread measures, over 100,000 keys, what adding or
// removing one of n endpoints moves, on average over 20 changes of each
// kind, as a ratio to the ideal share (docs/performance.md has the table,
// docs/choices.md the trade). Without -long it measures 20,000 keys and
// 10 changes, and leaves out the largest tables. The ring
// of entriesPerWeight moves only the changed endpoint's keys, by
// construction: no key moves between staying endpoints, and the average
// stays within 1.1 times the ideal. A42's ring
// and Maglev move other keys too; their bounds pin the figures measured
// (a regression in the construction moves far more). A42's ring moves
// none between staying endpoints at n = 1,000, where its maximum, 4,096
// entries, fixes the scale, but with about 4 entries per endpoint the
// shares of the endpoints changed vary widely (0.77x here). Maglev is
// within 1.1 at n = 10; its excess grows with n²/M (1.5x at n = 100 and
// 7x at n = 1,000 with 65,537 entries, 1.1x and 4.3x with 655,373).
func TestDisruptionAndSpread(t *testing.T) {
	// -long: the figures of docs/performance.md; else fewer, which keep
	// make test quick under -race.
	keys, changes := 20_000, 10
	if *long {
		keys, changes = 100_000, 20
	}
	// bound[layout][n] is the largest ratio allowed, for removals and
	// additions alike.
	bound := map[string]map[int]float64{
		"ring":                      {10: 1.8, 100: 1.25, 1000: 1.1},
		"ring/entriesPerWeight=100": {10: 1.1, 100: 1.1, 1000: 1.1},
		"maglev/65537":              {10: 1.1, 100: 1.8, 1000: 8},
		"maglev/655373":             {10: 1.1, 100: 1.3, 1000: 5},
	}
	for _, l := range layouts() {
		for _, n := range []int{10, 100, 1000} {
			t.Run(fmt.Sprintf("%s/n=%d", l.name, n), func(t *testing.T) {
				if l.longFrom != 0 && n >= l.longFrom && !*long {
					t.Skip("a large table: run with -args -long (make stress)")
				}
				t.Parallel()
				d := measureDisruption(l.build, n, changes, keys)
				t.Logf("%s n=%d moved, as a ratio to the ideal share: removal %.2fx, addition %.2fx; between staying endpoints %.4f of the keys per change",
					l.name, n, d.removed, d.added, d.between)
				if b := bound[l.name][n]; d.removed > b || d.added > b {
					t.Errorf("moved %.2fx on removal, %.2fx on addition: more than %.1fx the ideal share", d.removed, d.added, b)
				}
				if l.name == "ring/entriesPerWeight=100" && d.between != 0 {
					t.Errorf("%.4f of the keys moved between staying endpoints per change", d.between)
				}
			})
		}
	}
}

// shares returns each endpoint's share of the hash space in tab: its
// entries' arcs for a ring (entry i covers the hashes above entry i-1's,
// up to its own), its entries' count for a Maglev table.
func shares(tab table, n int) []float64 {
	out := make([]float64, n)
	for i, e := range tab.slots {
		if tab.hashes == nil {
			out[e] += 1 / float64(len(tab.slots))
			continue
		}
		prev := tab.hashes[(i+len(tab.hashes)-1)%len(tab.hashes)]
		out[e] += float64(tab.hashes[i]-prev) / (1 << 64) // wraps at entry 0
	}
	return out
}

// TestSpread logs each layout's spread at n = 10, 100 and 1000: the
// largest share of the hash space an endpoint of weight 1 gets, times n
// (max/avg keys per endpoint with infinitely many keys; docs/performance.md).
func TestSpread(t *testing.T) {
	for _, l := range layouts() {
		for _, n := range []int{10, 100, 1000} {
			if l.longFrom != 0 && n >= l.longFrom && !*long {
				continue
			}
			sh := shares(l.build(nodesN(n)), n)
			t.Logf("%s n=%d: max/avg share of the hash space %.2f, min/avg %.2f", l.name, n, slices.Max(sh)*float64(n), slices.Min(sh)*float64(n))
		}
	}
}
