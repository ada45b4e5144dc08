//go:build linux

package edf

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/lbkit/lbkit/internal/threadcpu"
	"github.com/lbkit/lbkit/lb/edf/edfbench"
)

// BenchmarkGenerateCPU is BenchmarkGenerate (the bucket generator, n = 100
// and 1000) in CPU time of the generating thread (clock_gettime's thread
// clock) rather than in wall time, so that a loaded machine, which takes
// the core away from the benchmark, does not count: the fastest of 31
// rounds of 64 blocks each, after 3 unmeasured rounds, in cpu-ns/point.
// Run it once per cell, alternating two builds to compare them:
//
//	go test -run '^$' -bench BenchmarkGenerateCPU -benchtime=1x ./lb/edf/
func BenchmarkGenerateCPU(b *testing.B) {
	for _, d := range edfbench.Dists {
		for _, n := range []int{100, 1000} {
			w := d.Weights(n)
			b.Run(fmt.Sprintf("w=%s/n=%d", d.Name, n), func(b *testing.B) {
				s, _ := New(entriesOf(make([]int, n), w), withMode(modeRing))
				if s.ring == nil {
					b.Skip("no ring")
				}
				r := s.ring
				words := r.slotWords(0)
				const blocks, rounds = 64, 34
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var per []float64
				for b.Loop() {
					for i := range rounds {
						before := threadcpu.Now()
						for range blocks {
							r.gen.fill(words, uint(r.pack))
						}
						if i >= 3 {
							per = append(per, float64(threadcpu.Now()-before)/float64(int(blocks)<<r.shift))
						}
					}
				}
				b.ReportMetric(slices.Min(per), "cpu-ns/point")
			})
		}
	}
}
