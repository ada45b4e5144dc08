//go:build linux

package peakewma

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/lbkit/lbkit/internal/threadcpu"
	"github.com/lbkit/lbkit/lb"
)

// BenchmarkPickCPU is BenchmarkPick (serial pick and Done) in CPU time of
// the picking thread (clock_gettime's thread clock) rather than in wall
// time, so that a loaded machine, which takes the core away from the
// benchmark, does not count. Per cell it alternates the policy's pickers
// and the mutex baseline, 2^18 requests each, 15 times, and reports the
// fastest round of each (cpu-ns/op) and the median of the 15 ratios to
// the baseline. Run it once per cell:
//
//	go test -run '^$' -bench BenchmarkPickCPU -benchtime=1x ./lb/peakewma/
func BenchmarkPickCPU(b *testing.B) {
	info := lb.PickInfo{Ctx: context.Background(), Method: "/pkg.Service/Method"}
	for _, c := range benchClocks() {
		for _, n := range []int{10, 100, 1000} {
			impls := benchPickers(b, c.clk, n)
			b.Run(fmt.Sprintf("clock=%s/n=%d", c.name, n), func(b *testing.B) {
				const requests, reps = 1 << 18, 15
				best := make([]float64, len(impls))
				ratios := make([][]float64, len(impls))
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for b.Loop() {
					for range reps {
						t := make([]float64, len(impls))
						for i, impl := range impls {
							t[i] = cpuPerRequest(impl.picker, info, requests)
						}
						base := t[len(t)-1] // the mutex baseline comes last
						for i := range impls {
							if best[i] == 0 || t[i] < best[i] {
								best[i] = t[i]
							}
							ratios[i] = append(ratios[i], t[i]/base)
						}
					}
				}
				for i, impl := range impls {
					b.ReportMetric(best[i], impl.name+"-cpu-ns/op")
					if i < len(impls)-1 {
						slices.Sort(ratios[i])
						b.ReportMetric(ratios[i][len(ratios[i])/2], impl.name+"/baseline")
					}
				}
			})
		}
	}
}

// cpuPerRequest returns the CPU time of the calling thread per request
// (pick, then Done at once) over k requests through p, in ns.
func cpuPerRequest(p lb.Picker, info lb.PickInfo, k int) float64 {
	before := threadcpu.Now()
	for range k {
		r, err := p.Pick(info)
		if err != nil || r.SubConn == nil {
			panic("pick failed")
		}
		r.Done(lb.DoneInfo{})
	}
	return float64(threadcpu.Now()-before) / float64(k)
}
