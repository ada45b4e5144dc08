package sim

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
)

func run1(t *testing.T, scenario string) *Report {
	t.Helper()
	s, err := ParseScenario([]byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(s)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Round robin over identical backends gives each exactly its share, from
// one client or several. Traffic starts once every connection is up: the
// requests that wait for the first picker all go to the first backend that
// connects, as they would in a channel.
func TestRoundRobinExactShares(t *testing.T) {
	for _, traffic := range []string{
		`"rates": [{"at": "0s", "rate": 0}, {"at": "1s", "rate": 500}], "requests": 11000`,
		`"count": 5, "rates": [{"at": "0s", "rate": 0}, {"at": "1s", "rate": 100}], "requests": 2200`,
	} {
		t.Run(traffic, func(t *testing.T) {
			rep := run1(t, fmt.Sprintf(`{"name": "rr", "seed": 5, "duration": "60s",
				"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
				"clients": [{%s}],
				"backends": [{"name": "b", "count": 11, "connectDelay": "0.01s", "service": {"lognormal": {"median": "0.02s", "sigma": 1}}}]}`, traffic))
			res := rep.Policies[0]
			if res.Requests != 11000 || res.Succeeded != 11000 {
				t.Fatalf("%d requests, %d succeeded; want 11000 and 11000", res.Requests, res.Succeeded)
			}
			for _, b := range res.Backends {
				if b.Requests != 1000 {
					t.Errorf("%s received %d requests, want exactly 1000", b.Name, b.Requests)
				}
			}
		})
	}
}

// Outlier detection, fed by the Done of every request, ejects the backend
// that fails on its interval timer, in virtual time, and returns it after
// the fault.
func TestOutlierDetectionEjectsInVirtualTime(t *testing.T) {
	rep := run1(t, `{"name": "od", "seed": 2, "duration": "60s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"outlier_detection_experimental": {
			"interval": "1s", "baseEjectionTime": "2s",
			"failurePercentageEjection": {"threshold": 50, "minimumHosts": 3, "requestVolume": 10},
			"childPolicy": [{"round_robin": {}}]}}]}}],
		"clients": [{"rate": 500, "timeout": "1s"}],
		"backends": [{"name": "b", "count": 5, "service": {"constant": "0.01s"}}],
		"faults": [{"backend": "b0", "from": "10s", "until": "25s", "errors": {"rate": 1}}]}`)
	series := rep.Policies[0].Series
	share := func(from, to int) float64 {
		var b0, all uint32
		for _, s := range series[from:to] {
			b0 += s.Backends[0]
			for _, n := range s.Backends {
				all += n
			}
		}
		return float64(b0) / float64(all)
	}
	before, during, after := share(2, 10), share(12, 25), share(50, 60)
	t.Logf("b0's share: %.3f before, %.3f during, %.3f after", before, during, after)
	if before < 0.18 || during > 0.05 || after < 0.18 {
		t.Errorf("b0's share %.3f before, %.3f during the errors, %.3f after: want about 0.2, under 0.05, about 0.2", before, during, after)
	}
}

// A zone outage under a priority tree: traffic fails over to p1 when every
// backend of p0 stops, and returns when they restart.
func TestPriorityFailoverAndReturn(t *testing.T) {
	rep := run1(t, `{"name": "zones", "seed": 2, "duration": "60s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"priority_experimental": {
			"priorities": ["p0", "p1"],
			"children": {"p0": {"config": [{"round_robin": {}}]}, "p1": {"config": [{"round_robin": {}}]}}}}]}}],
		"clients": [{"rate": 200, "timeout": "1s", "backoff": {"baseDelay": "0.5s", "multiplier": 1, "jitter": 0, "maxDelay": "0.5s"}}],
		"backends": [
			{"name": "a", "count": 3, "hierarchy": ["p0"], "service": {"constant": "0.01s"}},
			{"name": "z", "count": 3, "hierarchy": ["p1"], "service": {"constant": "0.01s"}}],
		"faults": [
			{"backend": "a0", "from": "10s", "until": "30s", "stop": {}},
			{"backend": "a1", "from": "10s", "until": "30s", "stop": {}},
			{"backend": "a2", "from": "10s", "until": "30s", "stop": {}}]}`)
	series := rep.Policies[0].Series
	p1 := func(s Second) uint32 { return s.Backends[3] + s.Backends[4] + s.Backends[5] }
	if n := p1(series[5]); n != 0 {
		t.Errorf("p1 received %d requests in second 5, before the outage", n)
	}
	if n := p1(series[20]); n < 150 {
		t.Errorf("p1 received %d requests in second 20, during the outage; want about 200", n)
	}
	if n := p1(series[45]); n != 0 {
		t.Errorf("p1 received %d requests in second 45, after p0 returned", n)
	}
	res := rep.Policies[0]
	t.Logf("success %.4f, failures %+v", res.SuccessRate, res.Failed)
}

// Every field and fault kind at once: the run ends, deterministically,
// with every request accounted for.
func TestEveryFieldRuns(t *testing.T) {
	data, err := os.ReadFile("testdata/scenarios/all-fields.json")
	if err != nil {
		t.Fatal(err)
	}
	rep := run1(t, string(data))
	res := rep.Policies[0]
	f := res.Failed
	if res.Succeeded+f.Timeout+f.Error+f.NoPick+f.Unfinished != res.Requests || res.Requests == 0 {
		t.Fatalf("requests %d != succeeded %d + failed %+v", res.Requests, res.Succeeded, f)
	}
	if f.Error == 0 {
		t.Errorf("no request failed at b1, whose errors fault fails half")
	}
	t.Logf("%d requests, success %.3f, failed %+v", res.Requests, res.SuccessRate, f)
}

// clockUser is a policy that breaks the contract: it waits on the clock.
type clockUser struct{}

func (clockUser) Name() string { return "clock_user" }
func (clockUser) Build(_ lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	opts.Clock.AfterFunc(time.Second, func() {})
	return nil
}

// A policy that makes a timer on the clock instead of the Scheduler gets
// the run stopped with an error that says so, not a panic.
func TestPolicyTimerOnTheClockIsAnError(t *testing.T) {
	s, err := ParseScenario([]byte(`{"name": "x", "duration": "1s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"rate": 1}], "backends": [{"name": "b", "service": {"constant": "0.001s"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s.policies[0].parsed = &lb.ParsedPolicy{Name: "clock_user", Builder: clockUser{}}
	_, err = Run(s)
	var ce contractError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "Clock.AfterFunc") {
		t.Fatalf("Run: %v, want the contract error naming Clock.AfterFunc", err)
	}
}

// A closed loop over service times of 0 cannot move time forward: the run
// stops with an error that says so instead of spinning.
func TestTimeThatCannotAdvanceIsAnError(t *testing.T) {
	s, err := ParseScenario([]byte(`{"name": "zero", "duration": "1s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"concurrency": 1}],
		"backends": [{"name": "b", "service": {"constant": "0s"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s.atOneInstant = 10_000
	if _, err := Run(s); err == nil || !strings.Contains(err.Error(), "virtual time stopped at 0s") {
		t.Fatalf("Run: %v, want the error that time stopped", err)
	}
}

// The resolver's state follows the timeline: a removed endpoint gets
// nothing until it returns, a new weight moves weighted_round_robin's
// shares; a stopped backend restarts warming up, slow at first.
func TestTimelineChangesTheResolverStateAndWarmsUp(t *testing.T) {
	rep := run1(t, `{"name": "timeline", "seed": 4, "duration": "45s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"weighted_round_robin": {}}]}}],
		"clients": [{"rate": 300, "timeout": "1s"}],
		"backends": [{"name": "b", "count": 3, "weight": 1, "service": {"constant": "0.01s"}},
			{"name": "w", "service": {"constant": "0.01s"}}],
		"faults": [
			{"backend": "b0", "from": "10s", "until": "20s", "removed": {}},
			{"backend": "b2", "from": "30s", "weight": 3},
			{"backend": "w", "removed": {}, "until": "1s"},
			{"backend": "w", "from": "5s", "until": "7s", "stop": {"warmup": "10s", "warmupFactor": 5}}]}`)
	series := rep.Policies[0].Series
	sum := func(from, to, b int) (n, all uint32) {
		for _, s := range series[from:to] {
			n += s.Backends[b]
			for _, v := range s.Backends {
				all += v
			}
		}
		return n, all
	}
	if n, _ := sum(11, 20, 0); n != 0 {
		t.Errorf("b0 got %d requests while removed", n)
	}
	if n, all := sum(32, 45, 2); float64(n)/float64(all) < 0.49 || float64(n)/float64(all) > 0.51 {
		t.Errorf("b2 got %d of %d requests at weight 3 of 6: want 50%%", n, all)
	}
	if n, _ := sum(5, 7, 3); n != 0 {
		t.Errorf("w got %d requests while stopped", n)
	}
	if n, _ := sum(8, 20, 3); n == 0 {
		t.Errorf("w got no request after its restart")
	}

	// Alone, w's restart shows in the latency: 10 ms × (1 + 4 × the part
	// of the 10 s warm-up left).
	one := run1(t, `{"name": "warmup", "seed": 4, "duration": "25s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"rate": 100, "timeout": "1s", "backoff": {"baseDelay": "0.1s", "multiplier": 1, "jitter": 0, "maxDelay": "0.1s"}}],
		"backends": [{"name": "w", "service": {"constant": "0.01s"}}],
		"faults": [{"backend": "w", "from": "5s", "until": "7s", "stop": {"warmup": "10s", "warmupFactor": 5}}]}`)
	for _, c := range []struct {
		sec      int
		lo, hi   float64
		describe string
	}{{3, 10, 10, "before"}, {8, 40, 48, "1 to 2 s after the restart"}, {12, 20, 28, "5 to 6 s after"}, {20, 10, 10, "after the warm-up"}} {
		if p50 := one.Policies[0].Series[c.sec].P50Ms; p50 < c.lo*0.99 || p50 > c.hi*1.01 {
			t.Errorf("p50 in second %d (%s): %v ms, want %v to %v", c.sec, c.describe, p50, c.lo, c.hi)
		}
	}
}
