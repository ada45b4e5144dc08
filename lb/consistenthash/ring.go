package consistenthash

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// ringNode is one endpoint as the ring sees it.
type ringNode struct {
	// hashKey places the endpoint on the ring: its hash-key attribute
	// (gRFC A76) or else its address.
	hashKey string
	// weight is the endpoint's weight, at least 1.
	weight uint32
}

// ringEntry is one point of the ring while it is built: a hash and the
// index, in the nodes the ring was built from, of the endpoint it stands
// for.
type ringEntry struct {
	hash     uint64
	endpoint int32
}

// table is where a policy places requests. slots[i] is the index of the
// endpoint of entry i. For a ring, hashes[i] is entry i's hash, sorted,
// and a request goes to the first entry whose hash is at least its own
// (wrapping); for a Maglev table hashes is nil and a request goes to entry
// hash mod len(slots). From there the picker walks the entries in order.
// A table is immutable once built; pickers share it.
type table struct {
	hashes []uint64
	slots  []int32
}

// first returns the entry a request with hash h goes to.
func (t table) first(h uint64) int {
	if t.hashes == nil {
		return int(h % uint64(len(t.slots)))
	}
	return search(t.hashes, h)
}

// buildRing builds the ring of nodes (not empty) as Envoy and gRPC build
// it (gRFC A42, "Ring Construction"), so that the same endpoints, weights
// and sizes give the same ring, entry for entry, as grpc-go's ring_hash:
//
//   - each node's weight is normalized by the sum of all weights, and the
//     nodes are taken in order of their hash keys;
//   - the scale is the smallest ring above minSize in which the lightest
//     node has a whole number of entries, at most maxSize;
//   - walking the nodes, node i gets entries until the running count of
//     entries reaches the running sum of scale·weight_i, entry k of a node
//     hashed from "<hashKey>_<k>" with XXH64 (seed 0);
//   - the entries are sorted by hash.
//
// The weights are summed in 64 bits (grpc-go sums them in 32, which wraps
// above 2^32).
func buildRing(nodes []ringNode, minSize, maxSize uint64) table {
	order, sum := byHashKey(nodes)
	minWeight := 1.0
	for _, n := range nodes {
		minWeight = math.Min(minWeight, float64(n.weight)/float64(sum))
	}
	scale := math.Min(math.Ceil(minWeight*float64(minSize))/minWeight, float64(maxSize))
	e := entries{ring: make([]ringEntry, 0, int(math.Ceil(scale)))}
	var made, target float64
	for _, i := range order {
		target += scale * (float64(nodes[i].weight) / float64(sum))
		// The entries that bring the running count to the running target
		// or past it: made is a whole number, so this is the count of
		// A42's loop "while made < target, add an entry".
		count := math.Max(0, math.Ceil(target)-made)
		e.add(nodes[i].hashKey, i, uint64(count))
		made += count
	}
	return sortRing(e.ring)
}

// buildFixedRing builds a ring in which node i has weight_i × perWeight
// entries, hashed as [buildRing] hashes them ("<hashKey>_<k>", k from 0),
// when these number at most maxSize; else it is buildRing's ring, and
// tooBig says why. An endpoint's entries then do not depend on the other
// endpoints: adding or removing one moves only the keys of its own
// entries, and raising a weight only adds entries (Karger et al.'s ring
// with weight × perWeight virtual nodes per endpoint).
func buildFixedRing(nodes []ringNode, perWeight, minSize, maxSize uint64) (t table, tooBig error) {
	var sum uint64
	for _, n := range nodes {
		sum += uint64(n.weight)
	}
	if sum > maxSize/perWeight {
		return buildRing(nodes, minSize, maxSize), fmt.Errorf("the weights sum to %d, and %d entries per unit of weight would exceed maxRingSize %d", sum, perWeight, maxSize)
	}
	e := entries{ring: make([]ringEntry, 0, sum*perWeight)}
	for i, n := range nodes {
		e.add(n.hashKey, int32(i), uint64(n.weight)*perWeight)
	}
	return sortRing(e.ring), nil
}

// entries collects a ring's entries while it is built.
type entries struct {
	ring []ringEntry
	// key is the buffer "<hashKey>_<k>" is written in, reused.
	key []byte
}

// add appends count entries of endpoint, entry k hashed with XXH64 (seed
// 0) from "<hashKey>_<k>".
func (e *entries) add(hashKey string, endpoint int32, count uint64) {
	e.key = append(append(e.key[:0], hashKey...), '_')
	prefix := len(e.key)
	for k := range count {
		e.key = strconv.AppendUint(e.key[:prefix], k, 10)
		e.ring = append(e.ring, ringEntry{hash: xxhash.Sum64(e.key), endpoint: endpoint})
	}
}

// sortRing sorts ring's entries by hash (ties by endpoint) into a table.
func sortRing(ring []ringEntry) table {
	slices.SortFunc(ring, func(a, b ringEntry) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.endpoint, b.endpoint)
	})
	t := table{hashes: make([]uint64, len(ring)), slots: make([]int32, len(ring))}
	for i, e := range ring {
		t.hashes[i], t.slots[i] = e.hash, e.endpoint
	}
	return t
}

// byHashKey returns the indices of nodes in order of their hash keys (ties
// in the order given), the order Envoy and gRPC build their tables in, and
// the sum of the weights, in 64 bits.
func byHashKey(nodes []ringNode) (order []int32, sum uint64) {
	order = make([]int32, len(nodes))
	for i, n := range nodes {
		order[i] = int32(i)
		sum += uint64(n.weight)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(nodes[a].hashKey, nodes[b].hashKey) })
	return order, sum
}

// search returns the index of the first of hashes (sorted) that is at
// least h, wrapping to 0 past the last.
func search(hashes []uint64, h uint64) int {
	lo, hi := 0, len(hashes)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if hashes[mid] < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(hashes) {
		return 0
	}
	return lo
}
