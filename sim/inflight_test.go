package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// MeanInFlight is the time average of a backend's attempts in flight over
// each second: a closed loop of two requests at once on one backend, with
// no round trip, keeps exactly two in flight in every whole second.
func TestMeanInFlightIsTheTimeAverage(t *testing.T) {
	res := run1(t, `{"name": "mean", "seed": 3,
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"concurrency": 2, "requests": 1000}],
		"backends": [{"name": "b", "service": {"constant": "0.01s"}}]}`).Policies[0]
	if len(res.Series) < 4 {
		t.Fatalf("%d seconds in the series, want at least 4", len(res.Series))
	}
	for _, s := range res.Series[:4] { // 1,000 requests of 10 ms, two at once: 5 s
		if got := s.MeanInFlight[0]; got != 2 {
			t.Errorf("second %d: mean in flight %v, want 2", s.T, got)
		}
	}
}

// inFlightBalance returns issue 27's figure for seconds [from, to) of p:
// the max/avg, across the backends that served in every one of those
// seconds, of each backend's requests in flight averaged over the window
// (from MeanInFlight); and, beside it, the worst second's max/avg of the
// backends' peaks (PeakInFlight), the measure docs/simulation.md's join
// scenario uses.
func inFlightBalance(t *testing.T, p PolicyResult, from, to int) (mean, worstPeak float64) {
	t.Helper()
	if to > len(p.Series) {
		t.Fatalf("seconds %d to %d: the series has %d", from, to, len(p.Series))
	}
	sums := map[int]float64{}
	seconds := map[int]int{}
	for _, s := range p.Series[from:to] {
		var peakSum, peakTop float64
		n := 0
		for i, c := range s.Backends {
			if c == 0 {
				continue
			}
			sums[i] += s.MeanInFlight[i]
			seconds[i]++
			peakSum, peakTop, n = peakSum+float64(s.PeakInFlight[i]), math.Max(peakTop, float64(s.PeakInFlight[i])), n+1
		}
		if peakSum > 0 {
			worstPeak = math.Max(worstPeak, peakTop/(peakSum/float64(n)))
		}
	}
	var sum, top float64
	n := 0
	for i, v := range sums {
		if seconds[i] == to-from {
			sum, top, n = sum+v, math.Max(top, v), n+1
		}
	}
	return top / (sum / float64(n)), worstPeak
}

// S3's max/avg of requests in flight across backends, as issue 27 states
// the figure ("at most 1.3 with slow start", the figure without beside),
// from each backend's time average over a window: the calm fleet (5 to
// 30 s), each wave's first 10 s of service (its new backends refuse for
// 2 s and are READY within 3 s of joining: seconds w+3 to w+13), and each
// wave's slow period (w+3 to w+30). The whole scenario under -long (make
// sim), its first wave otherwise (and there only the policies asserted).
// Asserted: with slow start, round_robin holds 1.3 in every wave's first
// 10 s, and without it does not; with slow start fitted to the warm-up
// (lb/slowstart's rule), round_robin, least_request and peak_ewma hold it
// over every wave's first 10 s and its whole slow period. The rest is
// logged (docs/simulation.md quotes it).
func TestS3InFlightBalance(t *testing.T) {
	rep, waves := runS3Waves(t, 50*time.Second, func(name string) bool {
		return strings.HasPrefix(name, "round_robin") || strings.HasSuffix(name, "fitted")
	})
	first10, slowPeriod := map[string]float64{}, map[string]float64{}
	for _, p := range rep.Policies {
		calm, calmPeak := inFlightBalance(t, p, 5, 30)
		var line strings.Builder
		fmt.Fprintf(&line, "%-32s calm %.2f (peaks %.2f)", p.Policy, calm, calmPeak)
		for _, w := range waves {
			f10, f10Peak := inFlightBalance(t, p, w+3, w+13)
			slow, _ := inFlightBalance(t, p, w+3, min(w+30, len(p.Series)-1))
			first10[p.Policy] = math.Max(first10[p.Policy], f10)
			slowPeriod[p.Policy] = math.Max(slowPeriod[p.Policy], slow)
			fmt.Fprintf(&line, "; wave %d s: first 10 s %.2f (peaks %.2f), slow period %.2f", w, f10, f10Peak, slow)
		}
		t.Log(line.String())
	}
	if with, without := first10["round_robin, slow start 30s"], first10["round_robin"]; with > 1.3 || without <= 1.3 {
		t.Errorf("round_robin: max/avg in flight in the waves' first 10 s %.2f with slow start, %.2f without; want at most 1.3 with, above without", with, without)
	}
	for _, name := range []string{"round_robin, slow start fitted", "least_request, slow start fitted", "peak_ewma, slow start fitted"} {
		if f10, slow := first10[name], slowPeriod[name]; !(f10 <= 1.3 && slow <= 1.3) {
			t.Errorf("%s: max/avg in flight %.3f over the waves' first 10 s, %.3f over their slow period; want at most 1.3", name, f10, slow)
		}
	}
}
