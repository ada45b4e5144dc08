package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb/backoff"
)

// runInternal runs the scenario's first policy and returns the run, for
// tests that look inside it.
func runInternal(t *testing.T, scenario string) *run {
	t.Helper()
	s, err := ParseScenario([]byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	return runParsed(t, s)
}

// runParsed runs s's first policy and returns the run.
func runParsed(t *testing.T, s *Scenario) *run {
	t.Helper()
	r := &run{sc: s, policy: &s.policies[0], byName: make(map[string]*backend), stopAt: forever}
	r.build()
	r.loop()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r
}

// A refused backend is dialled on the channel's own backoff schedule
// (lb/connstate, as conn runs it): after 0 s, then 1 s, 1.6 s, 2.56 s and
// 4.096 s of backoff (base 1 s, ×1.6, no jitter), so 5 dials in 10 s,
// while the backend that answers is dialled once.
func TestRefusedBackendIsRedialledWithTheChannelsBackoff(t *testing.T) {
	r := runInternal(t, `{"name": "backoff", "duration": "10s", "drain": "0s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"rate": 10, "backoff": {"baseDelay": "1s", "multiplier": 1.6, "jitter": 0, "maxDelay": "120s"}}],
		"backends": [{"name": "b", "count": 2, "connectDelay": "0.001s", "service": {"constant": "0.001s"}}],
		"faults": [{"backend": "b1", "from": "0s", "refuse": {}}]}`)
	bo := backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, MaxDelay: 120 * time.Second}
	want, at := 0, time.Duration(0)
	for i := 0; at < 10*time.Second; i++ {
		want++
		at += time.Millisecond + bo.Delay(i, nil)
	}
	if got := r.byName["b1"].dials; got != want || want != 5 {
		t.Errorf("refused backend dialled %d times in 10 s, want %d (5)", got, want)
	}
	if got := r.byName["b0"].dials; got != 1 {
		t.Errorf("answering backend dialled %d times, want 1", got)
	}
}

// A dial that outlasts the attempt's timeout (max(minConnectTimeout,
// backoff)) fails at the timeout, as conn's does, and is retried after the
// backoff.
func TestDialTimesOutAtTheMinConnectTimeout(t *testing.T) {
	r := runInternal(t, `{"name": "timeout", "duration": "10s", "drain": "0s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"rate": 10, "minConnectTimeout": "2s", "backoff": {"baseDelay": "1s", "multiplier": 1, "jitter": 0, "maxDelay": "1s"}}],
		"backends": [{"name": "ok", "connectDelay": "0.001s", "service": {"constant": "0.001s"}},
		             {"name": "slow", "connectDelay": "5s", "service": {"constant": "0.001s"}}]}`)
	// Dials at 0, 3, 6, 9 s: each times out after 2 s, then 1 s of backoff.
	if got := r.byName["slow"].dials; got != 4 {
		t.Errorf("slow backend dialled %d times in 10 s, want 4", got)
	}
}

// Health checks (gRFC A17, lb/connstate as conn runs them) take a backend
// whose checks fail out of round robin's rotation after unhealthyThreshold
// failures, and put it back after healthyThreshold passes; without
// healthCheck nothing is checked and round robin keeps sending to it.
func TestHealthChecksGateTraffic(t *testing.T) {
	const sc = `{"name": "health", "duration": "10s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"rate": 200 %s}],
		"backends": [{"name": "b", "count": 2, "connectDelay": "0.001s", "service": {"constant": "0.001s"}}],
		"faults": [{"backend": "b1", "from": "2s", "until": "6s", "unhealthy": {}}]}`
	checked := run1(t, fmt.Sprintf(sc, `, "healthCheck": {"interval": "0.1s", "timeout": "0.05s", "unhealthyThreshold": 2, "healthyThreshold": 2, "jitter": 0}`)).Policies[0]
	plain := run1(t, fmt.Sprintf(sc, "")).Policies[0]
	if a, b := plain.Backends[0].Requests, plain.Backends[1].Requests; a+b == 0 || absDiff(a, b) > 1 {
		t.Errorf("without health checks: %d and %d requests, want equal shares", a, b)
	}
	a, b := checked.Backends[0].Requests, checked.Backends[1].Requests
	// b1 is out for about 4 s of 10: it gets half of the other 6 s, 0.3.
	if share := float64(b) / float64(a+b); share < 0.28 || share > 0.32 {
		t.Errorf("with health checks: b1 got %.3f of the requests (%d of %d), want about 0.3", share, b, a+b)
	}
	if checked.Succeeded != checked.Requests {
		t.Errorf("%d of %d requests succeeded, want all (the unhealthy backend still serves)", checked.Succeeded, checked.Requests)
	}
}

// A client that checks health probes a connection backing off at the
// health-check interval (lb/connstate, as conn does), and a passing probe
// ends the backoff: a backend refused for 20 s, whose backoff has grown to
// 10.5 s by then, serves again before 20.6 s (one 0.5 s interval, a 1 ms
// dial and A17's first check), while without health checks it is not
// dialled again until about 26 s and serves nothing by then (issue 27).
func TestHealthCheckedClientProbesDuringBackoff(t *testing.T) {
	const sc = `{"name": "probe", "duration": "20.6s", "drain": "0s",
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"rate": 200, "backoff": {"baseDelay": "1s", "multiplier": 1.6, "jitter": 0, "maxDelay": "120s"} %s}],
		"backends": [{"name": "b", "count": 2, "connectDelay": "0.001s", "service": {"constant": "0.001s"}}],
		"faults": [{"backend": "b1", "from": "0s", "until": "20s", "refuse": {}}]}`
	checked := run1(t, fmt.Sprintf(sc, `, "healthCheck": {"interval": "0.5s", "timeout": "0.1s", "jitter": 0}`)).Policies[0]
	plain := run1(t, fmt.Sprintf(sc, "")).Policies[0]
	if got := checked.Backends[1].Requests; got == 0 {
		t.Error("with health checks: b1 served nothing within one interval and a connection attempt of its return")
	}
	if got := plain.Backends[1].Requests; got != 0 {
		t.Errorf("without health checks: b1 served %d requests before its backoff ended", got)
	}
}

// A backend's rtt is added to every request, half on the way out and half
// on the way back.
func TestNetworkLatencyAddsTheRoundTrip(t *testing.T) {
	res := run1(t, `{"name": "rtt", "seed": 3,
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"concurrency": 1, "requests": 100}],
		"backends": [{"name": "b", "rtt": "0.004s", "service": {"constant": "0.01s"}}]}`).Policies[0]
	if res.Latency.Max != 14 || res.Latency.P50 < 13.9 || res.Latency.P50 > 14.1 {
		t.Errorf("latency p50 %v ms, max %v ms; want 14 ms (10 ms of service, 4 ms of round trip)", res.Latency.P50, res.Latency.Max)
	}
}

// loadFactor makes a request's service time grow with the requests the
// backend serves when it starts: with two in a closed loop and a factor of
// 0.5, a request takes 10 ms alone and 15 ms beside another.
func TestLoadFactorSlowsABusyBackend(t *testing.T) {
	res := run1(t, `{"name": "load", "seed": 3,
		"policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
		"clients": [{"concurrency": 2, "requests": 100}],
		"backends": [{"name": "b", "loadFactor": 0.5, "service": {"constant": "0.01s"}}]}`).Policies[0]
	if res.Latency.Max != 15 || res.Latency.Mean < 12 {
		t.Errorf("latency mean %v ms, max %v ms; want a mean above 12 ms and a max of 15 ms", res.Latency.Mean, res.Latency.Max)
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}
