package edf

import (
	"math/big"
	"slices"
)

// model is the reference implementation: the specification's pseudo-code
// with exact rational deadlines and a linear scan, plus the carry-over rule
// documented on NewFrom, written from its definition in virtual time rather
// than from positions.
type model struct {
	items    []int
	weights  []uint32
	deadline []*big.Rat // next deadline of each entry, in the spec's units
}

func newModel(entries []Entry[int]) *model {
	m := &model{}
	for _, e := range entries {
		m.items = append(m.items, e.Item)
		m.weights = append(m.weights, e.Weight)
		m.deadline = append(m.deadline, big.NewRat(1, int64(e.Weight)))
	}
	return m
}

func (m *model) step(i int) *big.Rat {
	return big.NewRat(1, int64(m.weights[i]))
}

// pick returns the entry with the smallest (deadline, index) and advances
// its deadline by 1/weight.
func (m *model) pick() int {
	best := 0
	for i := 1; i < len(m.items); i++ {
		if m.deadline[i].Cmp(m.deadline[best]) < 0 {
			best = i
		}
	}
	m.deadline[best].Add(m.deadline[best], m.step(best))
	return m.items[best]
}

func (m *model) gcd() int64 {
	var g uint32
	for _, w := range m.weights {
		g = gcd(g, w)
	}
	return int64(g)
}

// carryOver returns the model of NewFrom(m, entries).
func (m *model) carryOver(entries []Entry[int]) *model {
	// Known items keep m's order, new ones follow.
	entries = slices.Clone(entries)
	rank := func(e Entry[int]) int {
		if i := slices.Index(m.items, e.Item); i >= 0 {
			return i
		}
		return len(m.items)
	}
	slices.SortStableFunc(entries, func(x, y Entry[int]) int { return rank(x) - rank(y) })
	// The most recent pick is the largest (previous deadline, index); an
	// entry never picked has previous deadline 0.
	var v *big.Rat
	for i := range m.items {
		prev := new(big.Rat).Sub(m.deadline[i], m.step(i))
		if v == nil || prev.Cmp(v) >= 0 {
			v = prev
		}
	}
	var picked []int // the items picked at exactly v
	for i := range m.items {
		prev := new(big.Rat).Sub(m.deadline[i], m.step(i))
		if prev.Cmp(v) == 0 {
			picked = append(picked, m.items[i])
		}
	}
	// The phase: v in periods (one period is 1/gcd), modulo 1, in (0, 1].
	phase := new(big.Rat).Mul(v, big.NewRat(m.gcd(), 1))
	whole := new(big.Int).Quo(phase.Num(), phase.Denom())
	phase.Sub(phase, new(big.Rat).SetInt(whole))
	if phase.Sign() == 0 {
		phase.SetInt64(1)
	}
	// An item not picked at v is late if it was at least halfway
	// through its interval: (v - its previous deadline) * weight >= 1/2.
	var late []int
	for i := range m.items {
		prev := new(big.Rat).Sub(m.deadline[i], m.step(i))
		f := new(big.Rat).Mul(new(big.Rat).Sub(v, prev), big.NewRat(int64(m.weights[i]), 1))
		if f.Cmp(big.NewRat(1, 2)) >= 0 {
			late = append(late, m.items[i])
		}
	}
	// The tie order around v, each part keeping its relative order:
	//   head: the entries up to the last one picked at v with a point at
	//         the phase (p0), but those moved below;
	//   up:   after p0, entries not picked at v, not late and not new,
	//         whose new grid has a point at the phase (passed there);
	//   z:    before p0, entries not picked at v, late or new, with a
	//         point at the phase (still ahead there);
	//   rest: the other entries after p0;
	//   rear: entries picked at v with no point at the phase.
	g := newModel(entries).gcd()
	onGrid := func(e Entry[int]) bool {
		return new(big.Rat).Mul(phase, big.NewRat(int64(e.Weight)/g, 1)).IsInt()
	}
	isPicked := func(e Entry[int]) bool { return slices.Contains(picked, e.Item) }
	ahead := func(e Entry[int]) bool { // not picked, on the grid, point at v still ahead
		return !isPicked(e) && onGrid(e) && (slices.Contains(late, e.Item) || !slices.Contains(m.items, e.Item))
	}
	passedFresh := func(e Entry[int]) bool { return !isPicked(e) && onGrid(e) && !ahead(e) }
	p0 := -1
	for k, e := range entries {
		if isPicked(e) && onGrid(e) {
			p0 = k
		}
	}
	var head, up, z, rest, rear []Entry[int]
	for k, e := range entries {
		switch {
		case isPicked(e) && !onGrid(e):
			rear = append(rear, e)
		case k <= p0 && ahead(e):
			z = append(z, e)
		case k <= p0:
			head = append(head, e)
		case passedFresh(e):
			up = append(up, e)
		default:
			rest = append(rest, e)
		}
	}
	p := len(head) + len(up) - 1
	entries = slices.Concat(head, up, z, rest, rear)
	n := newModel(entries)
	for k, e := range entries {
		// Count the grid points j/w'' (w'' = weight/gcd) at or before the
		// phase; a point exactly at it is still ahead when k > p.
		x := new(big.Rat).Mul(phase, big.NewRat(int64(e.Weight)/g, 1))
		c := new(big.Int).Quo(x.Num(), x.Denom())
		if x.IsInt() && k > p {
			c.Sub(c, big.NewInt(1))
		}
		c.Add(c, big.NewInt(1))
		n.deadline[k] = new(big.Rat).SetFrac(c, big.NewInt(int64(e.Weight)))
	}
	return n
}
