package consistenthash

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// TestBoundedLoad: with hashBalanceFactor, random weighted endpoints all
// READY, and random picks (a few hot keys) and completions, checked after
// every pick against the definition (Envoy's hash_balance_factor;
// Mirrokni, Thorup and Zadimoghaddam):
//   - no endpoint holds more than ceil(ceil((in flight before + 1) ×
//     factor/100) × its weight share) requests;
//   - a request goes to the first endpoint along its walk from its hash
//     that is below that bound: keys move only as far as the bound makes
//     them.
func TestBoundedLoad(t *testing.T) {
	for _, name := range []string{RingHashName, MaglevName} {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { runBounded(t, name) })
		})
	}
}

func runBounded(t *rapid.T, name string) {
	factor := rapid.IntRange(MinHashBalanceFactor, 300).Draw(t, "factor")
	n := rapid.IntRange(2, 6).Draw(t, "endpoints")
	h := lbtest.New(t, lbtest.WithRegistry(lbtest.NewRegistry(RingHashBuilder{}, MaglevBuilder{})))
	size := `"minRingSize": 64`
	if name == MaglevName {
		size = `"tableSize": 257`
	}
	_, cfg := h.BuildPolicy(name, fmt.Sprintf(`{"hashBalanceFactor": %d, %s}`, factor, size))
	var as []resolver.Address
	for i := range n {
		w := uint32(rapid.IntRange(1, 4).Draw(t, "weight"))
		as = append(as, weight.Set(resolver.Address{Addr: fmt.Sprintf("10.0.0.%d:80", i)}, w))
	}
	if err := h.UpdateAddresses(cfg, as...); err != nil {
		t.Fatal(err)
	}
	b := h.Balancer.(*balancer)
	h.Do(func() {
		for _, ep := range b.list {
			b.connectIdle(ep)
		}
	})
	for i := range n {
		h.SubConn(i).Connecting()
		h.SubConn(i).Ready()
	}
	p := h.State().Picker.(*picker)
	var open []lb.PickResult
	for range 200 {
		if len(open) > 0 && rapid.Bool().Draw(t, "finish") {
			k := rapid.IntRange(0, len(open)-1).Draw(t, "which")
			open[k].Done(lb.DoneInfo{})
			open = append(open[:k], open[k+1:]...)
			continue
		}
		hash := uint64(rapid.IntRange(0, 3).Draw(t, "key")) * 0x9e3779b97f4a7c15
		before := p.bound.inFlight.Load()
		want := -1
		first := p.table.first(hash)
		for k := range p.table.slots {
			idx := int(p.table.slots[(first+k)%len(p.table.slots)])
			ep := &p.endpoints[idx]
			if ep.load.Load() < p.bound.slots(before, ep.weight) {
				want = idx
				break
			}
		}
		r, err := p.Pick(hashed(hash))
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, r)
		if r.SubConn != lb.SubConn(h.SubConn(want)) {
			t.Fatalf("hash %x went to %v, want endpoint %d, the first below its bound", hash, r.SubConn, want)
		}
		ep := &p.endpoints[want]
		if got, limit := ep.load.Load(), p.bound.slots(before, ep.weight); got > limit {
			t.Fatalf("endpoint %d holds %d requests, bound %d", want, got, limit)
		}
	}
	for _, r := range open {
		r.Done(lb.DoneInfo{})
	}
	if p.bound.inFlight.Load() != 0 {
		t.Fatalf("%d requests still counted after every Done", p.bound.inFlight.Load())
	}
}
