package edf

import (
	"math/bits"
	"sync"
)

// heapNode is one entry in the heap implementation. Its next deadline is
// num/w periods; num counts from the start of the period the scheduler was
// last positioned in, so it stays far below 2^64 (it grows by one per pick
// of the entry) and num*w fits in 128 bits.
type heapNode struct {
	num uint64
	w   uint32
	idx uint32
}

// less orders nodes by deadline, then by index, comparing num_a/w_a with
// num_b/w_b exactly as num_a*w_b against num_b*w_a in 128 bits.
func less(a, b *heapNode) bool {
	ah, al := bits.Mul64(a.num, uint64(b.w))
	bh, bl := bits.Mul64(b.num, uint64(a.w))
	if ah != bh {
		return ah < bh
	}
	if al != bl {
		return al < bl
	}
	return a.idx < b.idx
}

// heapState is a 4-ary min-heap of all entries behind a mutex: the
// specification's algorithm with exact deadlines. It was the fallback for
// long periods before the ring; it is kept as a second, independent exact
// implementation that the tests check the table and the ring against
// (withMode(modeHeap)), and New never chooses it.
type heapState struct {
	mu     sync.Mutex
	nodes  []heapNode // guarded by mu
	pos    uint64     // picks made in the current period, in [0, period); guarded by mu
	period uint64     // immutable
}

func newHeapState(w []uint32, period uint64) *heapState {
	h := &heapState{nodes: make([]heapNode, len(w)), period: period}
	for i, x := range w {
		h.nodes[i] = heapNode{num: 1, w: x, idx: uint32(i)}
	}
	h.heapify() // all deadlines are 1/w: heaviest first, then by index
	return h
}

func (h *heapState) heapify() {
	for i := (len(h.nodes) - 2) / 4; i >= 0; i-- {
		h.down(i)
	}
}

// down restores the heap property below node i.
func (h *heapState) down(i int) {
	nodes := h.nodes
	n := len(nodes)
	x := nodes[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < c+4 && j < n; j++ {
			if less(&nodes[j], &nodes[m]) {
				m = j
			}
		}
		if !less(&nodes[m], &x) {
			break
		}
		nodes[i] = nodes[m]
		i = m
	}
	nodes[i] = x
}

// pick returns the index of the entry with the earliest deadline and
// advances that deadline by one step.
func (h *heapState) pick() uint32 {
	h.mu.Lock()
	top := &h.nodes[0]
	idx := top.idx
	top.num++
	h.down(0)
	if h.pos++; h.pos == h.period {
		h.pos = 0
	}
	h.mu.Unlock()
	return idx
}

// skip advances by n picks: O(len(w) * log(maxW)), independent of n.
func (h *heapState) skip(n uint64, w []uint32, maxW uint32) {
	k := n % h.period
	if k == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	pos := h.pos + k // both below period, no overflow
	if pos >= h.period {
		pos -= h.period
	}
	h.seek(pos, w, maxW)
}

// seek sets the state to the one after the first pos picks of a period.
// h.mu must be held (or h not yet shared).
func (h *heapState) seek(pos uint64, w []uint32, maxW uint32) {
	consumed := make([]uint64, len(w))
	if pos != 0 {
		seek(w, maxW, pos, func(i int, n uint64) { consumed[i] = n })
	}
	for i, x := range w {
		h.nodes[i] = heapNode{num: consumed[i] + 1, w: x, idx: uint32(i)}
	}
	h.heapify()
	h.pos = pos
}
