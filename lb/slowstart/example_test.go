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

// Fitting a ramp to a warm-up (the package doc's "Choosing the
// parameters"): a backend 5× slower until 30 s after it starts, READY no
// sooner than 2 s after, under round_robin in a restart of 5 of 20
// backends at a time. The factor stays at the floor for most of the
// warm-up, is below 1/5 when the warm-up ends (28 s after the earliest
// READY), and reaches 1 by the window's end.
func Example_fittedToAWarmUp() {
	const (
		warmUp   = 30 * time.Second // T, from the backend's start
		ready    = 2 * time.Second  // d, its earliest READY after the start
		slowdown = 5.0              // s
	)
	aggression := math.Log(warmUp.Seconds()/(warmUp-ready).Seconds()) / math.Log(slowdown)
	c := slowstart.Config{
		SlowStartWindow:  warmUp,
		Aggression:       math.Floor(aggression*1000) / 1000, // rounded down
		MinWeightPercent: 5,                                  // round_robin's band: 4.6% to 5.5%
	}
	if err := c.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	js, _ := c.MarshalJSON()
	fmt.Printf("%s\n", js)
	for _, t := range []time.Duration{0, 20 * time.Second, warmUp - ready, 29 * time.Second, warmUp} {
		fmt.Printf("%4v after READY: factor %.3f\n", t, c.Factor(t))
	}
	// Output:
	// {"slowStartWindow":"30s","aggression":0.042,"minWeightPercent":5}
	//   0s after READY: factor 0.050
	//  20s after READY: factor 0.050
	//  28s after READY: factor 0.193
	//  29s after READY: factor 0.446
	//  30s after READY: factor 1.000
}
