//go:build linux

package edf_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/lbkit/lbkit/internal/threadcpu"
	"github.com/lbkit/lbkit/lb/edf"
	"github.com/lbkit/lbkit/lb/edf/edfbench"
)

// BenchmarkPickCPU measures Pick against the round-robin floor (serial)
// in CPU time of the picking thread (clock_gettime's thread clock) rather than
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
	before := threadcpu.Now()
	var s int
	for range k {
		s += p.Pick()
	}
	sink.Add(int64(s))
	return float64(threadcpu.Now()-before) / float64(k)
}

// BenchmarkBuildCPU measures New and NewFrom (from a scheduler over the
// same items 12345 picks in, with the previous round's weights for a58) in
// CPU time of the building thread, the fastest of 30 builds after 5
// unmeasured ones: BenchmarkBuild and BenchmarkBuildA58 for a loaded
// machine. Run it once per cell:
//
//	go test -run '^$' -bench BenchmarkBuildCPU -benchtime=1x ./lb/edf/
func BenchmarkBuildCPU(b *testing.B) {
	dists := map[string]func(int) []uint32{"a58": a58Weights}
	for _, d := range edfbench.Dists {
		if d.Name == "1..100" || d.Name == "63..64" {
			dists[d.Name] = d.Weights
		}
	}
	for _, name := range []string{"1..100", "63..64", "a58"} {
		for _, n := range []int{1000, 10000, 100000} {
			w := dists[name](n)
			old := w
			if name == "a58" {
				old = a58Weights(n + 1)[:n]
			}
			prev, err := edf.New(entries(old))
			if err != nil {
				b.Fatal(err)
			}
			for range 12345 {
				prev.Pick()
			}
			e := entries(w)
			for _, impl := range []string{"edf", "edf-newfrom"} {
				b.Run(fmt.Sprintf("w=%s/impl=%s/n=%d", name, impl, n), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					best := int64(1) << 62
					for b.Loop() {
						for k := range 35 {
							before := threadcpu.Now()
							if impl == "edf" {
								_, err = edf.New(e)
							} else {
								_, err = edf.NewFrom(prev, e)
							}
							if k >= 5 {
								best = min(best, threadcpu.Now()-before)
							}
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(best), "cpu-ns/build")
				})
			}
		}
	}
}
