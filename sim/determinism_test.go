package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// shortS1 is S1 cut to 8 s with the slow window from 2 s to 6 s, under
// every policy kind the shipped scenarios use plus an outlier-detection
// tree, whose timers run in virtual time; with health checks, a network
// round trip, a load factor, refused connections (jittered backoff), a
// restart and a failing health check, so that lb/connstate's timers and
// random draws are in it too.
const shortS1 = `{
  "name": "s1-short", "seed": 3, "duration": "8s",
  "policies": [
    {"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}},
    {"serviceConfig": {"loadBalancingConfig": [{"least_request_experimental": {}}]}},
    {"serviceConfig": {"loadBalancingConfig": [{"weighted_round_robin": {}}]}},
    {"serviceConfig": {"loadBalancingConfig": [{"sim_oracle": {}}]}},
    {"name": "od", "serviceConfig": {"loadBalancingConfig": [{"outlier_detection_experimental": {
      "interval": "1s", "baseEjectionTime": "5s",
      "failurePercentageEjection": {"threshold": 50, "minimumHosts": 3, "requestVolume": 20},
      "childPolicy": [{"round_robin": {}}]}}]}}
  ],
  "clients": [{"rate": 1000, "timeout": "1s", "retries": 1, "healthCheck": {"interval": "0.5s", "timeout": "0.1s"}}],
  "backends": [{"name": "b", "count": 11, "rtt": "0.002s", "loadFactor": 0.01, "connectDelay": "0.001s",
    "service": {"normal": {"mean": "0.167s", "stddev": "0.005s"}}}],
  "faults": [
    {"backend": "b0", "from": "2s", "until": "6s", "slower": {"latency": "2s"}},
    {"backend": "b1", "from": "2s", "until": "6s", "errors": {"rate": 0.9}},
    {"backend": "b2", "from": "0s", "until": "3s", "refuse": {}},
    {"backend": "b3", "from": "3s", "until": "5s", "stop": {"warmup": "1s", "warmupFactor": 3}},
    {"backend": "b4", "from": "2s", "until": "5s", "unhealthy": {}}
  ]
}`

func reportJSON(t *testing.T, scenario string) []byte {
	t.Helper()
	out, err := json.Marshal(run1(t, scenario))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeterministic runs one scenario twice in this process, at two
// GOMAXPROCS, and once more in a child process (other map seeds, another
// GOMAXPROCS): the reports must be equal byte for byte.
func TestDeterministic(t *testing.T) {
	if os.Getenv("LBSIM_DETERMINISM_CHILD") != "" {
		fmt.Printf("%x\n", sha256.Sum256(reportJSON(t, shortS1)))
		return
	}
	prev := runtime.GOMAXPROCS(1)
	a := reportJSON(t, shortS1)
	runtime.GOMAXPROCS(4)
	b := reportJSON(t, shortS1)
	runtime.GOMAXPROCS(prev)
	if !bytes.Equal(a, b) {
		t.Fatalf("two runs differ:\n%.2000s\n%.2000s", a, b)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeterministic$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LBSIM_DETERMINISM_CHILD=1", "GOMAXPROCS=3")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := fmt.Sprintf("%x", sha256.Sum256(a))
	if !bytes.Contains(out, []byte(want)) {
		t.Fatalf("child process (GOMAXPROCS=3) reported another hash:\n%s\nwant %s", out, want)
	}
	var rep Report
	if err := json.Unmarshal(a, &rep); err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Policies {
		t.Logf("%-28s success %.4f p99 %.1f ms", p.Policy, p.SuccessRate, p.Latency.P99)
	}
}
