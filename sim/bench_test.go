package sim

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// benchScenario is S1 under one policy, or, with many backends, S1's shape
// widened: n backends and 90 req/s per backend, for 10 s.
func benchScenario(b *testing.B, policy string, n int) *Scenario {
	b.Helper()
	var data []byte
	if n == 0 {
		var err error
		if data, err = os.ReadFile("scenarios/s1-linkerd.json"); err != nil {
			b.Fatal(err)
		}
	} else {
		data = []byte(fmt.Sprintf(`{"name": "wide", "duration": "10s",
			"policies": [{"serviceConfig": {"loadBalancingConfig": [{"%s": {}}]}}],
			"clients": [{"rate": %d, "timeout": "1s"}],
			"backends": [{"name": "b", "count": %d, "service": {"normal": {"mean": "0.167s", "stddev": "0.005s"}}}],
			"faults": [{"backend": "b0", "from": "3s", "until": "7s", "slower": {"latency": "2s"}}]}`, policy, 90*n, n))
	}
	s, err := ParseScenario(data)
	if err != nil {
		b.Fatal(err)
	}
	for i, p := range s.policies {
		if p.parsed.Name == policy {
			s.policies = s.policies[i : i+1]
			return s
		}
	}
	if n == 0 {
		b.Fatalf("S1 has no %s", policy)
	}
	return s
}

// cpuTime returns the CPU time the process has used (user and system, every
// thread: the garbage collector's too).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRequests measures simulated requests per CPU-second (the
// process's CPU time, the garbage collector's included), at S1's size
// and at 1,000 backends; and S3 in full (100 clients, 40 endpoints over
// the run, connections through lb/connstate with refusals and backoff).
func BenchmarkRequests(b *testing.B) {
	for _, size := range []int{0, 1000} {
		for _, policy := range []string{"round_robin", "least_request_experimental", "weighted_round_robin"} {
			name := fmt.Sprintf("S1/%s", policy)
			if size > 0 {
				name = fmt.Sprintf("backends=%d/%s", size, policy)
			}
			b.Run(name, func(b *testing.B) { benchRun(b, benchScenario(b, policy, size)) })
		}
	}
	b.Run("S3", func(b *testing.B) {
		data, err := os.ReadFile("scenarios/s3-rolling-restart.json")
		if err != nil {
			b.Fatal(err)
		}
		s, err := ParseScenario(data)
		if err != nil {
			b.Fatal(err)
		}
		benchRun(b, s)
	})
}

// benchRun runs s per iteration and reports its requests (of every
// policy) per CPU-second.
func benchRun(b *testing.B, s *Scenario) {
	b.ReportAllocs()
	var requests uint64
	cpu0 := cpuTime(b)
	for b.Loop() {
		rep, err := Run(s)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range rep.Policies {
			requests += p.Requests
		}
	}
	b.ReportMetric(float64(requests)/(cpuTime(b)-cpu0).Seconds(), "requests/CPU-s")
	b.ReportMetric(0, "ns/op")
}
