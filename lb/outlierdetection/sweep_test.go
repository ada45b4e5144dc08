package outlierdetection

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

var five = []string{"a", "b", "c", "d", "e"}

// fpConfig is a failure-percentage config: an address with at least 10
// calls in an interval, more than half of them failed, is ejected.
func fpConfig(interval, base, maxTime string, maxPct int) string {
	return fmt.Sprintf(`{"interval": %q, "baseEjectionTime": %q, "maxEjectionTime": %q, "maxEjectionPercent": %d,
		"failurePercentageEjection": {"threshold": 50, "minimumHosts": 1, "requestVolume": 10}, %s}`,
		interval, base, maxTime, maxPct, `"childPolicy": [{"test_addr_picker": {}}]`)
}

func TestSweepRunsExactlyAtTheInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.calls("a", 10, 10)
	e.h.Advance(10*time.Second - 1)
	e.wantEjected("")
	if got := e.childSees("a"); got != lb.Ready {
		t.Fatalf("before the sweep the child sees %v for a, want READY", got)
	}
	e.h.Advance(1)
	e.wantEjected("a")
	if got := e.childSees("a"); got != lb.TransientFailure {
		t.Fatalf("after ejection the child sees %v for a, want TRANSIENT_FAILURE", got)
	}
	if e.call("a", false) {
		t.Fatal("a request reached the ejected address")
	}
	if e.h.SubConn(0).IsShutdown() {
		t.Fatal("ejection shut the connection down; A50 keeps it for the return")
	}
	if next, _ := e.h.Serializer.NextDeadline(); !next.Equal(time.Unix(20, 0)) {
		t.Fatalf("next sweep at %v, want one interval after the last (+20s)", next.Sub(time.Unix(0, 0)))
	}
}

func TestEjectionLastsBaseTimeTimesMultiplier(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.calls("a", 10, 10)
	e.h.Advance(10 * time.Second) // ejected at +10s, multiplier 1: back at +40s
	e.wantEjected("a")
	e.h.Advance(30*time.Second - 1)
	e.wantEjected("a")
	e.h.Advance(1)
	e.wantEjected("")
	if got := e.childSees("a"); got != lb.Ready {
		t.Fatalf("after un-ejection the child sees %v for a, want READY (the real state)", got)
	}
	e.calls("a", 10, 10)
	e.h.Advance(10 * time.Second) // ejected again at +50s, multiplier 2: back at +110s
	e.wantEjected("a")
	e.h.Advance(60*time.Second - 1)
	e.wantEjected("a")
	e.h.Advance(1)
	e.wantEjected("")
	if m := e.multiplier("a"); m != 2 {
		t.Fatalf("multiplier %d right after un-ejection, want 2", m)
	}
	// Each sweep without ejection lowers the multiplier by one.
	e.h.Advance(10 * time.Second)
	if m := e.multiplier("a"); m != 1 {
		t.Fatalf("multiplier %d one sweep later, want 1", m)
	}
	e.h.Advance(20 * time.Second)
	if m := e.multiplier("a"); m != 0 {
		t.Fatalf("multiplier %d, want 0", m)
	}
}

func TestEjectionTimeIsCappedByMaxEjectionTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("5s", "30s", "45s", 10), five...)
	e.calls("a", 10, 10)
	e.h.Advance(5 * time.Second) // ejected at +5s for 30s
	e.h.Advance(30 * time.Second)
	e.wantEjected("")
	e.calls("a", 10, 10)
	e.h.Advance(5 * time.Second) // ejected at +40s; 2 × 30s is capped at 45s: back at +85s
	e.wantEjected("a")
	e.h.Advance(45*time.Second - 1)
	e.wantEjected("a")
	e.h.Advance(1)
	e.wantEjected("")
}

func TestMaxEjectionTimeBelowBaseMeansBase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("5s", "20s", "1s", 10), five...)
	e.calls("a", 10, 10)
	e.h.Advance(5 * time.Second) // the cap is max(20s, 1s): back at +25s
	e.h.Advance(20*time.Second - 1)
	e.wantEjected("a")
	e.h.Advance(1)
	e.wantEjected("")
}

func (e *env) multiplier(addr string) int64 {
	var m int64
	e.h.Do(func() { m = e.b().entries[addr].multiplier })
	return m
}

func TestMaxEjectionPercent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pct  int
		want string
	}{
		{0, "a"}, // at least one, whatever the value
		{10, "a"},
		{20, "a"},
		{21, "a,b"},
		{40, "a,b"},
		{41, "a,b,c"},
		{100, "a,b,c,d,e"},
	} {
		t.Run(fmt.Sprint(tc.pct), func(t *testing.T) {
			e := newEnv(t)
			e.update(fpConfig("10s", "30s", "300s", tc.pct), five...)
			for _, a := range five {
				e.calls(a, 10, 10)
			}
			e.h.Advance(10 * time.Second)
			e.wantEjected(tc.want)
		})
	}
}

func TestSuccessRateEjectsTheOutlier(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(`{"successRateEjection": {}, "childPolicy": [{"test_addr_picker": {}}]}`, five...)
	// Rates 1, 1, 1, 1, 0.5: mean 0.9, stdev 0.2, threshold 0.9 - 1.9×0.2 = 0.52.
	e.callsFailingOne(100, "c", 50, five...)
	e.h.Advance(DefaultInterval)
	e.wantEjected("c")
}

func TestSuccessRateNeedsMinimumHostsAndVolume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(`{"successRateEjection": {}, "childPolicy": [{"test_addr_picker": {}}]}`, five...)
	for _, a := range five {
		n, failures := 100, 0
		switch a {
		case "c":
			failures = 50
		case "e":
			n = 99 // below requestVolume: only four hosts qualify, fewer than minimumHosts
		}
		e.calls(a, n, failures)
	}
	e.h.Advance(DefaultInterval)
	e.wantEjected("")
}

func TestFailurePercentageIsStrictlyAboveThreshold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 100), five...)
	e.calls("a", 10, 5) // exactly 50%: not above the threshold
	e.calls("b", 10, 6)
	e.calls("c", 9, 9) // below requestVolume
	e.h.Advance(10 * time.Second)
	e.wantEjected("b")
}

func TestFailurePercentageNeedsMinimumHosts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(`{"failurePercentageEjection": {"minimumHosts": 3, "requestVolume": 10}, "childPolicy": [{"test_addr_picker": {}}]}`, five...)
	e.calls("a", 10, 10)
	e.calls("b", 10, 0)
	e.h.Advance(DefaultInterval)
	e.wantEjected("")
	e.calls("a", 10, 10)
	e.calls("b", 10, 0)
	e.calls("c", 10, 0)
	e.h.Advance(DefaultInterval)
	e.wantEjected("a")
}

func TestEnforcementPercentageDrawsFromTheTreeRand(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 20; seed++ {
		e := newEnv(t, lbtest.WithSeed(seed))
		e.update(`{"failurePercentageEjection": {"enforcementPercentage": 50, "minimumHosts": 1, "requestVolume": 10},
			"childPolicy": [{"test_addr_picker": {}}]}`, five...)
		e.calls("a", 10, 10)
		e.h.Advance(DefaultInterval)
		want := ""
		if seededRand(t, seed).IntN(100) < 50 {
			want = "a"
		}
		e.wantEjected(want)
	}
}

// seededRand returns a fresh copy of the random source a harness seeded
// with seed gives its tree: the draws the policy will make, in order.
func seededRand(t lbtest.TB, seed uint64) *rand.Rand {
	return lbtest.New(t, lbtest.WithSeed(seed)).BuildOptions().Rand
}
