//go:build linux

package edf_test

import (
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/lbkit/lbkit/internal/edfbench"
)

// BenchmarkPickCPU measures Pick against the round-robin floor (serial)
// in CPU time of the picking thread (getrusage RUSAGE_THREAD) rather than
// in wall time, so that a loaded machine, which takes the core away from
// the benchmark, does not count; it alternates the two, 2^20 picks each,
// 15 times, and reports the fastest of each (cpu-ns/pick) and the median
// of the 15 ratios (edf/rr). Run it once per cell:
//
//	go test -run '^$' -bench BenchmarkPickCPU -benchtime=1x ./lb/edf/
func BenchmarkPickCPU(b *testing.B) {
	for _, d := range edfbench.Dists {
		if d.Name != "1..100" && d.Name != "63..64" {
			continue
		}
		for _, n := range edfbench.Sizes {
			w := d.Weights(n)
			b.Run(fmt.Sprintf("w=%s/n=%d", d.Name, n), func(b *testing.B) {
				e, r := newPicker(b, "edf", w), newPicker(b, "rr-baseline", w)
				const picks, reps = 1 << 20, 15
				var te, tr, ratio []float64
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for b.Loop() {
					for range reps {
						a, x := cpuPerPick(e, picks), cpuPerPick(r, picks)
						te, tr, ratio = append(te, a), append(tr, x), append(ratio, a/x)
					}
				}
				slices.Sort(ratio)
				b.ReportMetric(slices.Min(te), "edf-cpu-ns/pick")
				b.ReportMetric(slices.Min(tr), "rr-cpu-ns/pick")
				b.ReportMetric(ratio[len(ratio)/2], "edf/rr")
			})
		}
	}
}

// cpuPerPick returns the CPU time of the calling thread per pick over k
// picks, in ns.
func cpuPerPick(p picker, k int) float64 {
	before := threadCPU()
	var s int
	for range k {
		s += p.Pick()
	}
	sink.Add(int64(s))
	return float64(threadCPU()-before) / float64(k)
}

// threadCPU returns the CPU time the calling thread has used, in ns.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
