package edf

import (
	"math/bits"
	"sync/atomic"
)

// The scan generator: for at most scanMaxN entries with weights below
// 2^scanMaxBits, the generator keeps no slice buffer and produces each
// point as the smallest of the entries' next points.
//
// Each entry's next point j/w_i is kept as an exact fixed-point key
// K = floor(j * 2^shift / w_i) with shift = 2*bits.Len32(maxW), so that
// 2^shift >= (maxW+1)^2: two different values j/w_a != k/w_b differ by at
// least 1/(w_a*w_b) > 2^-shift, so their keys differ and compare as the
// values do, and equal values get equal keys. The key is stored shifted
// left by scanIdxBits with the entry's index in the low bits, so the
// smallest packed key is the smallest (value, index): the specification's
// order and tie-break in one unsigned comparison. A key advances by
// q = 2^shift / w_i with the remainder r = 2^shift % w_i carried in frac,
// as the bucket generator's step does. Keys count from the start of the
// period the generator was last restarted in; when every key has passed
// one period (2^shift), a period is subtracted from all of them, so they
// stay below 2^(shift+scanIdxBits+1) + 2^scanIdxBits <= 2^64.
//
// The entries are in four groups of four, each with its smallest key: a
// point is the smallest of the four group minima, and only the picked
// entry's group is recomputed, from its new key and the three others
// (addresses other than the one just stored). About 6 comparisons and 30
// instructions a point; the buffers of the bucket generator (a slice of
// at least 32 buckets: 480 bytes at n = 10) are not needed. Measured
// against the bucket generator at n = 10 in docs/performance.md.
const (
	scanMaxN    = 16
	scanIdxBits = 4 // log2(scanMaxN)
	scanMaxBits = 29
)

// scanState is a scan generator's per-entry state, in arrays of
// scanMaxN so that a point has a fixed shape (entries beyond n have the
// key ^0 and are never the smallest).
type scanState struct {
	key  [scanMaxN]uint64 // packed key of the entry's next point
	q    [scanMaxN]uint64 // packed step: (2^shift / w) << scanIdxBits
	frac [scanMaxN]uint32 // the next point's remainder: j*2^shift mod w
	r    [scanMaxN]uint32 // 2^shift % w
	// group[g] is the smallest key of entries 4g to 4g+3.
	group [scanMaxN / 4]uint64
}

// useScan reports whether the scan generator serves n entries whose
// largest reduced weight is maxW.
func useScan(n int, maxW uint32) bool {
	return n <= scanMaxN && bits.Len32(maxW) <= scanMaxBits
}

// initScan sets up g as a scan generator at the start of a period.
func (g *generator) initScan(w []uint32, maxW uint32, period uint64) {
	sc := &scanState{}
	*g = generator{w: w, maxW: maxW, m: period, scan: sc, shift: uint32(2 * bits.Len32(maxW))}
	for i := range sc.key {
		sc.key[i] = 1<<64 - 1
	}
	for i, x := range w {
		q := uint64(1) << g.shift / uint64(x)
		r := uint32(uint64(1)<<g.shift - q*uint64(x))
		sc.key[i], sc.q[i], sc.frac[i], sc.r[i] = q<<scanIdxBits|uint64(i), q<<scanIdxBits, r, r
	}
	sc.regroup()
}

// restartScan is restart for a scan generator: key[i] holds the number of
// points of entry i consumed in the current period (setConsumed).
func (g *generator) restartScan() {
	sc := g.scan
	for i := range g.w {
		x := uint64(g.w[i])
		j := sc.key[i] + 1 // <= w_i + 1 < 2^30
		q, r := sc.q[i]>>scanIdxBits, uint64(sc.r[i])
		// j * 2^shift = j*(q*w + r): key j*q + j*r/w, remainder j*r % w.
		jr := j * r // < 2^30 * 2^29
		sc.key[i] = (j*q+jr/x)<<scanIdxBits | uint64(i)
		sc.frac[i] = uint32(jr % x)
	}
	sc.regroup()
}

// fillScan is fill for a scan generator.
func (g *generator) fillScan(words []atomic.Uint64, pack uint) {
	sc, w := g.scan, g.w
	n := len(w)
	step := uint(1) << pack
	period := uint64(1) << (g.shift + scanIdxBits)
	k, gr := &sc.key, &sc.group
	for wi := range words {
		var v uint64
		for s := uint(0); s < 64; s += step {
			best := min(min(gr[0], gr[1]), min(gr[2], gr[3]))
			if best >= period { // every key is past the period's end
				for i := range n {
					k[i] -= period
				}
				sc.regroup()
				best -= period
			}
			i := best & (scanMaxN - 1)
			f, d := uint64(sc.frac[i])+uint64(sc.r[i]), uint64(w[i])
			carry := 1 - (f-d)>>63 // f >= d
			key := best + sc.q[i] + carry<<scanIdxBits
			k[i] = key
			sc.frac[i] = uint32(f - d&-carry)
			// The other keys of i's group, by addresses that differ from
			// the one just stored.
			gr[i/4] = min(min(key, k[i^1]), min(k[i^2], k[i^3]))
			v |= i << s
		}
		words[wi].Store(v)
	}
}

// regroup recomputes the group minima from the keys.
func (sc *scanState) regroup() {
	for g := range sc.group {
		k := sc.key[4*g : 4*g+4]
		sc.group[g] = min(min(k[0], k[1]), min(k[2], k[3]))
	}
}

// handedOutScan is handedOut for a scan generator, up to whole periods:
// the keys lost count of the periods subtracted from them, so it counts
// from the start of the current period and adds scanSlack periods, more
// than the blocks the generator is ahead by can span (ring.counts
// subtracts their picks, then reduces the counts to the current period).
func (g *generator) handedOutScan(cnt []uint64) {
	sc := g.scan
	for i := range g.w {
		// The next point is J/w with J*2^shift = K*w + frac.
		hi, lo := bits.Mul64(sc.key[i]>>scanIdxBits, uint64(g.w[i]))
		lo, carry := bits.Add64(lo, uint64(sc.frac[i]), 0)
		hi += carry
		cnt[i] = (hi<<(64-g.shift) | lo>>g.shift) - 1 + scanSlack*uint64(g.w[i])
	}
}

// scanSlack is a number of periods larger than ringSlots blocks of a
// ring of at most scanMaxN entries can reach into: such blocks hold
// 4*scanMaxN*ringSlots picks (64-pick blocks, see newRing), and a period
// of a ring is at least 2.
const scanSlack = 4 * scanMaxN * ringSlots
