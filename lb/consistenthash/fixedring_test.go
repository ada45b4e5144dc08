package consistenthash

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/lbkit/lbkit/lb/lbtest"
	"pgregory.net/rapid"
)

// drawNodes draws 1 to most endpoints of weights 1 to heaviest, and
// returns them with the sum of their weights.
func drawNodes(t *rapid.T, most, heaviest int) ([]ringNode, uint64) {
	nodes := make([]ringNode, rapid.IntRange(1, most).Draw(t, "endpoints"))
	var sum uint64
	for i := range nodes {
		w := uint32(rapid.IntRange(1, heaviest).Draw(t, "weight"))
		nodes[i] = ringNode{hashKey: fmt.Sprintf("10.0.%d.%d:80", i/256, i%256), weight: w}
		sum += uint64(w)
	}
	return nodes, sum
}

// TestPropertyFixedRing checks entriesPerWeight's ring against a model
// written from its contract: while the weights sum to at most
// maxRingSize / entriesPerWeight, endpoint i has exactly weight_i ×
// entriesPerWeight entries, the XXH64 hashes of "<hashKey>_<k>", and
// removing an endpoint or changing a weight moves no key between the other
// endpoints; past that, the ring is A42's.
func TestPropertyFixedRing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes, sum := drawNodes(t, 30, 20)
		n := len(nodes)
		perWeight := uint64(rapid.IntRange(1, 60).Draw(t, "entriesPerWeight"))
		maxSize := uint64(rapid.IntRange(int(perWeight), 20000).Draw(t, "max"))
		minSize := uint64(rapid.IntRange(1, int(maxSize)).Draw(t, "min"))
		ring, tooBig := buildFixedRing(nodes, perWeight, minSize, maxSize)
		if sum*perWeight > maxSize {
			if a42 := buildRing(nodes, minSize, maxSize); !slices.Equal(ring.hashes, a42.hashes) || !slices.Equal(ring.slots, a42.slots) {
				t.Fatalf("weights summing to %d × %d > %d: not A42's ring", sum, perWeight, maxSize)
			}
			if tooBig == nil {
				t.Fatalf("weights summing to %d × %d > %d: A42's ring, and no error says so", sum, perWeight, maxSize)
			}
			return
		}
		if tooBig != nil {
			t.Fatalf("weights summing to %d × %d <= %d: %v", sum, perWeight, maxSize, tooBig)
		}
		// The model: every endpoint's hashes, computed one by one.
		want := map[uint64]int32{}
		for i, nd := range nodes {
			for k := range uint64(nd.weight) * perWeight {
				want[xxhash.Sum64String(nd.hashKey+"_"+strconv.FormatUint(k, 10))] = int32(i)
			}
		}
		if len(ring.hashes) != int(sum*perWeight) {
			t.Fatalf("ring of %d entries, want %d", len(ring.hashes), sum*perWeight)
		}
		for i, h := range ring.hashes {
			if i > 0 && ring.hashes[i-1] > h {
				t.Fatalf("hashes descend at %d", i)
			}
			if e, ok := want[h]; !ok || e != ring.slots[i] {
				t.Fatalf("entry %d (hash %x) names endpoint %d, model %d (%v)", i, h, ring.slots[i], e, ok)
			}
		}
		// A change of one endpoint: removed, or its weight changed.
		c := rapid.IntRange(0, n-1).Draw(t, "changed")
		var after []ringNode
		if n > 1 && rapid.Bool().Draw(t, "remove") {
			after = slices.Delete(slices.Clone(nodes), c, c+1)
		} else {
			after = slices.Clone(nodes)
			after[c].weight = uint32(rapid.IntRange(1, int(nodes[c].weight)).Draw(t, "new weight"))
		}
		moved, _ := buildFixedRing(after, perWeight, minSize, maxSize) // fewer entries: fits
		for range 200 {
			h := rapid.Uint64().Draw(t, "key")
			was := nodes[ring.slots[ring.first(h)]].hashKey
			now := after[moved.slots[moved.first(h)]].hashKey
			if was != now && was != nodes[c].hashKey {
				t.Fatalf("key %x moved from %s to %s, though only %s changed", h, was, now, nodes[c].hashKey)
			}
		}
	})
}

// While the endpoints' weights × entriesPerWeight exceed maxRingSize, the
// ring is A42's, and the policy warns once, when it falls back, and again
// only after it fitted in between.
func TestEntriesPerWeightFallbackWarnsOnce(t *testing.T) {
	logs := &lbtest.Logs{}
	h := lbtest.New(t, lbtest.WithRegistry(lbtest.NewRegistry(RingHashBuilder{})), lbtest.WithLogger(slog.New(logs)))
	_, cfg := h.BuildPolicy(RingHashName, `{"entriesPerWeight": 10, "minRingSize": 16, "maxRingSize": 64}`)
	const warning = "entriesPerWeight does not fit"
	for _, step := range []struct {
		n        int
		entries  int // the ring's
		warnings int // so far
	}{
		{5, 50, 0},  // 5 × 10 fits in 64
		{10, 20, 1}, // 100 does not: A42's ring, 2 entries each (16 at least)
		{8, 16, 1},  // still A42's, no second warning
		{6, 60, 1},  // fits again
		{7, 21, 2},  // falls back again
	} {
		if err := h.UpdateAddresses(cfg, toAddrs(addrs(step.n))...); err != nil {
			t.Fatal(err)
		}
		if got := len(current(t, h).table.slots); got != step.entries {
			t.Errorf("%d endpoints: a ring of %d entries, want %d", step.n, got, step.entries)
		}
		if got := logs.Count(slog.LevelWarn, warning); got != step.warnings {
			t.Errorf("%d endpoints: %d warnings, want %d:\n%s", step.n, got, step.warnings, logs)
		}
	}
}
