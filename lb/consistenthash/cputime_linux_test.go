//go:build linux

package consistenthash

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/lbkit/lbkit/internal/threadcpu"
	"github.com/lbkit/lbkit/lb"
)

// BenchmarkPickCPU: maglev's READY pick against ring_hash's (the default
// ring of at most 4,096 entries; Maglev's 65,537 entries), timed by
// threadcpu.Now, so that the time other processes take the core away is
// not counted. For each n: 21 rounds, each with 2^16 picks of the same
// random hashes through both pickers (which goes first alternates); the
// metrics are each policy's best round in cpu-ns/pick and the median over
// the rounds of maglev/ring. One iteration measures everything:
//
//	go test -run '^$' -bench BenchmarkPickCPU -benchtime=1x ./lb/consistenthash/
func BenchmarkPickCPU(b *testing.B) {
	const picks, rounds = 1 << 16, 21
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			pickers := []lb.Picker{readyPolicy(b, RingHashName, `{"maxRingSize": 4096}`, n), readyPolicy(b, MaglevName, `{}`, n)}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			best := []float64{0, 0}
			var ratios []float64
			for b.Loop() {
				for r := range rounds {
					t := []float64{0, 0}
					for j := range pickers {
						k := (j + r) % 2
						t[k] = cpuPerPick(b, pickers[k], uint64(r)*picks, picks)
						if best[k] == 0 || t[k] < best[k] {
							best[k] = t[k]
						}
					}
					ratios = append(ratios, t[1]/t[0])
				}
			}
			slices.Sort(ratios)
			b.ReportMetric(best[0], "ring-cpu-ns/pick")
			b.ReportMetric(best[1], "maglev-cpu-ns/pick")
			b.ReportMetric(ratios[len(ratios)/2], "maglev/ring")
		})
	}
}

// cpuPerPick returns the CPU time of the calling thread per READY pick
// over k picks through p, of the hashes mix((from+i)·golden) as
// BenchmarkPick draws them, in ns.
func cpuPerPick(b *testing.B, p lb.Picker, from uint64, k int) float64 {
	before := threadcpu.Now()
	for i := range uint64(k) {
		if r, err := p.Pick(hashed(mix((from + i) * golden))); err != nil || r.SubConn == nil {
			b.Fatalf("pick: %v", err)
		}
	}
	return float64(threadcpu.Now()-before) / float64(k)
}
