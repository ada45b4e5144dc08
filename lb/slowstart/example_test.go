package slowstart_test

import (
	"fmt"
	"math"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// A backend joins two warm ones under round_robin with a 10 s linear slow
// start and a 10% floor: it gets 10% of a warm backend's share at once,
// half of it 5 s later, and its full share after the window.
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()
	h := lbtest.New(t)
	_, plain := h.BuildPolicy(roundrobin.Name, `{}`)
	cfg, _, err := lb.ParseConfig(roundrobin.Builder{}, []byte(`{"slowStartConfig": {
		"slowStartWindow": "10s", "aggression": 1, "minWeightPercent": 10}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	warm := []resolver.Address{{Addr: "10.0.0.1:443"}, {Addr: "10.0.0.2:443"}}
	h.UpdateAddresses(plain, warm...) // READY before slow start: no ramp
	h.SubConn(0).Ready()
	h.SubConn(1).Ready()

	h.UpdateAddresses(cfg, append(warm, resolver.Address{Addr: "10.0.0.3:443"})...)
	h.SubConn(2).Ready()
	for _, at := range []time.Duration{0, 5 * time.Second, 5*time.Second + 100*time.Millisecond} {
		h.Advance(at)
		counts, _ := lbtest.CountPicks(h.State().Picker, 4200)
		fmt.Printf("new backend: %d of 4200 picks\n", counts[h.SubConn(2)])
	}
	// Output:
	// new backend: 200 of 4200 picks
	// new backend: 840 of 4200 picks
	// new backend: 1400 of 4200 picks
}

// A Sampler draws indices in proportion to their weights: here a warm
// endpoint (factor 1) and one ramping at its 10% floor, over 11,000
// numbers spread evenly across the 64-bit range.
func ExampleSampler() {
	s := slowstart.NewSampler([]float64{1, 0.1})
	counts := make([]int, s.Len())
	const n = 11000
	for k := range uint64(n) {
		counts[s.Index(k*(math.MaxUint64/n))]++
	}
	fmt.Println(counts)
	// Output: [10000 1000]
}
