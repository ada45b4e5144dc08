package sim

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// shortS3 is S3 (sim/scenarios/s3-rolling-restart.json) cut to its first
// wave: 40 s, and 20 clients of 100 req/s instead of 100 of 20 (the same
// load on the fleet).
func shortS3(t *testing.T) *Scenario {
	t.Helper()
	s := loadScenario(t, "s3-rolling-restart")
	s.duration = 40 * time.Second
	s.clients = s.clients[:20]
	for i := range s.clients {
		s.clients[i].rates = []rateStep{{rate: 100}}
	}
	return s
}

// runS3Waves runs S3 and returns its report and the seconds its waves
// start: in full under -long (make sim), else its first wave (shortS3, run
// for short) under only the policies keep names (the ones a test asserts).
func runS3Waves(t *testing.T, short time.Duration, keep func(policy string) bool) (*Report, []int) {
	t.Helper()
	s, waves := shortS3(t), []int{30}
	s.duration = short
	s.policies = slices.DeleteFunc(s.policies, func(p policySpec) bool { return !keep(p.name) })
	if *long {
		s, waves = loadScenario(t, "s3-rolling-restart"), []int{30, 60, 90, 120}
	}
	rep, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	return rep, waves
}

// loadScenario parses sim/scenarios/<name>.json.
func loadScenario(t *testing.T, name string) *Scenario {
	t.Helper()
	data, err := os.ReadFile("scenarios/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseScenario(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// policyNamed returns the result of rep's policy named name.
func policyNamed(t *testing.T, rep *Report, name string) PolicyResult {
	t.Helper()
	for _, p := range rep.Policies {
		if p.Policy == name {
			return p
		}
	}
	t.Fatalf("no policy %q in the report", name)
	return PolicyResult{}
}

// runScenario runs sim/scenarios/<name>.json in full.
func runScenario(t *testing.T, name string) *Report {
	t.Helper()
	rep, err := Run(loadScenario(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// S3's rolling restart goes through the resolver and the channel's
// connect and backoff path: the new endpoints get no request before they
// join the resolver's state at 30 s, are dialled again after refusing
// (backoff) and then take traffic; the old ones get none after they
// leave; round robin keeps sending slow new backends their share and
// times out, where P2C least_request moves away from them.
func TestS3RollingRestartShort(t *testing.T) {
	s := shortS3(t)
	s.policies = slices.DeleteFunc(s.policies, func(p policySpec) bool { return strings.HasSuffix(p.name, "fitted") }) // the fitted ones have tests of their own
	rep, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(name string) int {
		i, ok := s.backendIndex(name)
		if !ok {
			t.Fatalf("no backend %s", name)
		}
		return i
	}
	for _, p := range rep.Policies {
		for _, sec := range p.Series {
			for _, name := range []string{"new0", "new4"} {
				if n := sec.Backends[idx(name)]; n > 0 && sec.T < 32 {
					t.Errorf("%s: %s received %d attempts in second %d, before it joined and accepted connections", p.Policy, name, n, sec.T)
				}
			}
			if n := sec.Backends[idx("old0")]; n > 0 && sec.T >= 31 {
				t.Errorf("%s: old0 received %d attempts in second %d, after it left the resolver's state", p.Policy, n, sec.T)
			}
		}
		if p.Backends[idx("new0")].Requests == 0 || p.Backends[idx("new5")].Requests != 0 {
			t.Errorf("%s: new0 got %d requests, new5 %d; want some and none", p.Policy, p.Backends[idx("new0")].Requests, p.Backends[idx("new5")].Requests)
		}
	}
	rr, p2c := policyNamed(t, rep, "round_robin"), policyNamed(t, rep, "least_request (P2C)")
	t.Logf("round_robin %.2f%% p99 %.0f ms; P2C %.2f%% p99 %.0f ms", 100*rr.SuccessRate, rr.Latency.P99, 100*p2c.SuccessRate, p2c.Latency.P99)
	if rr.SuccessRate >= p2c.SuccessRate || p2c.SuccessRate < 0.99 {
		t.Errorf("success: round_robin %.4f, P2C %.4f; want P2C above 99%% and above round robin", rr.SuccessRate, p2c.SuccessRate)
	}
}

// The new endpoints refuse connections for 2 s after they join: every
// client dials each of them again on the channel's backoff (1 s, then
// 1.6 s, with jitter), so about three times, where an old endpoint is
// dialled once per client.
func TestS3NewEndpointsAreRedialled(t *testing.T) {
	s := shortS3(t)
	s.duration = 34 * time.Second // the redials end by 33 s
	r := runParsed(t, s)
	clients := len(s.clients)
	if d := r.byName["old9"].dials; d != clients {
		t.Errorf("old9 dialled %d times, want once per client (%d)", d, clients)
	}
	if d := r.byName["new0"].dials; d < 2*clients || d > 4*clients {
		t.Errorf("new0 dialled %d times, want 2 to 4 per client (%d clients)", d, clients)
	}
}
