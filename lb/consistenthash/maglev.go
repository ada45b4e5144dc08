package consistenthash

import (
	"github.com/cespare/xxhash/v2"
)

// buildMaglev builds a Maglev lookup table of size entries (a prime) over
// nodes (not empty), as Envoy builds its weighted Maglev table (Eisenbud et
// al., NSDI 2016, pseudocode listing 1, with Envoy's weights):
//
//   - the nodes are taken in order of their hash keys;
//   - node i's permutation of the table is offset_i + j·skip_i (mod size),
//     with offset_i = XXH64(key, seed 0) mod size and skip_i =
//     XXH64(key, seed 1) mod (size−1) + 1;
//   - in rounds r = 1, 2, ..., each node whose weight w_i (normalized by
//     the sum) has r·w_i at least its running target claims the next free
//     entry of its permutation, and its target grows by the largest
//     normalized weight, until the table is full: a node of the largest
//     weight claims an entry every round, one of a third of it every third
//     round.
func buildMaglev(nodes []ringNode, size uint64) table {
	order, sum := byHashKey(nodes)
	type builder struct {
		node                 int32
		offset, skip, next   uint64
		weight, targetWeight float64
	}
	builders := make([]builder, len(order))
	maxWeight := 0.0
	for k, i := range order {
		key := nodes[i].hashKey
		seeded := xxhash.NewWithSeed(1)
		_, _ = seeded.WriteString(key)
		w := float64(nodes[i].weight) / float64(sum)
		maxWeight = max(maxWeight, w)
		builders[k] = builder{
			node:   i,
			offset: xxhash.Sum64String(key) % size,
			skip:   seeded.Sum64()%(size-1) + 1,
			weight: w,
		}
	}
	slots := make([]int32, size)
	taken := make([]bool, size)
	filled := uint64(0)
	for round := 1.0; filled < size; round++ {
		for k := 0; k < len(builders) && filled < size; k++ {
			b := &builders[k]
			if round*b.weight < b.targetWeight {
				continue
			}
			b.targetWeight += maxWeight
			c := (b.offset + b.skip*b.next) % size
			for taken[c] {
				b.next++
				c = (b.offset + b.skip*b.next) % size
			}
			slots[c], taken[c] = b.node, true
			b.next++
			filled++
		}
	}
	return table{slots: slots}
}
