package slowstart_test

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/slowstart"
	"github.com/lbkit/lbkit/lb/weight"
	"github.com/lbkit/lbkit/lb/wrr"
)

// modelFactor is the ramp as Envoy's documentation and gRFC A100 write it,
// in seconds: time_factor = max(t, 1)/window; the factor is
// max(minWeightPercent/100, time_factor^(1/aggression)) inside the window
// and 1 from its end on.
func modelFactor(t, window, aggression, minPct float64) float64 {
	if t >= window {
		return 1
	}
	tf := math.Max(t, 1) / window
	return math.Max(minPct/100, math.Pow(tf, 1/aggression))
}

// modelWeight is an endpoint's weight in the EDF while something ramps:
// base weight times resolution times factor, rounded, at least 1.
func modelWeight(base, res int, f float64) int {
	return max(1, int(math.Round(float64(base)*float64(res)*f)))
}

// TestRealisedShareFollowsRamp is the property of slow start with the EDF
// scheduler, for round_robin and weighted_round_robin: a warm fleet of
// 1 to 5 endpoints (random weights for weighted_round_robin), then a new
// endpoint becomes READY; at random sample points through its window (each
// a re-weighting tick, where the tracker re-publishes the picker) a random
// number N of consecutive picks gives every endpoint i a count c_i with
//
//	|c_i - N·w_i/W| <= 1 + n·w_i/W
//
// where w_i are the model's weights (base weight × resolution × the ramp's
// factor at that instant, from the spec's formula) and W their sum: EDF's
// deviation bound for a window of picks that starts at any point of
// virtual time, which is where a schedule continued by edf.NewFrom with
// changed weights stands. After the window the weights are the base ones.
func TestRealisedShareFollowsRamp(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		policy := rapid.SampledFrom([]string{roundrobin.Name, wrr.Name}).Draw(rt, "policy")
		window := time.Duration(rapid.SampledFrom([]int{2, 3, 5, 10, 30, 60, 120}).Draw(rt, "windowSeconds")) * time.Second
		aggression := rapid.Float64Range(0.2, 5).Draw(rt, "aggression")
		minPct := rapid.Float64Range(0, 100).Draw(rt, "minWeightPercent")
		old := rapid.IntRange(1, 5).Draw(rt, "oldEndpoints")
		base := make([]int, old+1)
		for i := range base {
			base[i] = 1
			if policy == wrr.Name {
				base[i] = rapid.IntRange(1, 20).Draw(rt, "weight"+strconv.Itoa(i))
			}
		}

		h := lbtest.New(rt, lbtest.WithSeed(rapid.Uint64().Draw(rt, "seed")))
		cfgJSON := fmt.Sprintf(`{"slowStartConfig": {"slowStartWindow": "%ds", "aggression": %v, "minWeightPercent": %v}}`,
			int(window.Seconds()), aggression, minPct)
		_, plain := h.BuildPolicy(policy, `{}`)
		cfg, _, err := lb.ParseConfig(h.Registry().Get(policy), []byte(cfgJSON))
		if err != nil {
			rt.Fatal(err)
		}
		addrs := make([]resolver.Address, len(base))
		for i := range addrs {
			addrs[i] = weight.Set(resolver.Address{Addr: "e" + strconv.Itoa(i)}, uint32(base[i]))
		}
		// The warm fleet, READY before slow start was configured: it does
		// not ramp.
		if err := h.UpdateAddresses(plain, addrs[:old]...); err != nil {
			rt.Fatal(err)
		}
		for i := range old {
			h.SubConn(i).Ready()
		}
		sc := slowstart.Config{SlowStartWindow: window, Aggression: aggression, MinWeightPercent: minPct}
		interval := sc.Interval()

		// The new endpoint.
		if err := h.UpdateAddresses(cfg, addrs...); err != nil {
			rt.Fatal(err)
		}
		h.SubConn(old).Ready()
		start := h.Clock.Now()
		bySC := map[lb.SubConn]int{}
		for i := range addrs {
			bySC[h.SubConn(i)] = i
		}

		// At most 8 sample points, so that a run moves the mock clock
		// through a bounded number of ticks; short windows reach their
		// end and the return to the base weights.
		samples := rapid.IntRange(1, 8).Draw(rt, "samples")
		for elapsed := time.Duration(0); elapsed <= window+interval && samples > 0; samples-- {
			secs := elapsed.Seconds()
			ramping := elapsed < window // the tick at the window's end prunes
			want := make([]int, len(base))
			maxBase := 0
			for _, b := range base {
				maxBase = max(maxBase, b)
			}
			res := min(slowstart.Resolution, math.MaxUint32/maxBase)
			total := 0
			for i, b := range base {
				switch {
				case !ramping:
					want[i] = b
				case i == old:
					want[i] = modelWeight(b, res, modelFactor(secs, window.Seconds(), aggression, minPct))
				default:
					want[i] = modelWeight(b, res, 1)
				}
				total += want[i]
			}
			n := rapid.IntRange(1, 3000).Draw(rt, "picks")
			counts, err := lbtest.CountPicks(h.State().Picker, n)
			if err != nil {
				rt.Fatal(err)
			}
			got := make([]int, len(base))
			for s, c := range counts {
				got[bySC[s]] = c
			}
			for i := range base {
				share := float64(want[i]) / float64(total)
				dev := math.Abs(float64(got[i]) - float64(n)*share)
				if bound := 1 + float64(len(base))*share; dev > bound+1e-9 {
					rt.Fatalf("at %v after the start (ramping %v): endpoint %d got %d of %d picks, want %.2f ± %.2f (weights %v)",
						elapsed, ramping, i, got[i], n, float64(n)*share, bound, want)
				}
			}
			step := time.Duration(rapid.IntRange(1, 15).Draw(rt, "ticks")) * interval
			h.Advance(step)
			elapsed = h.Clock.Now().Sub(start)
		}
	})
}
