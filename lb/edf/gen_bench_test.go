package edf

import (
	"fmt"
	"testing"

	"github.com/lbkit/lbkit/lb/edf/edfbench"
)

// BenchmarkGenerate measures the ring's generator alone, one block at a
// time as the ring fills its slots: ns per point. At n = 10 it measures
// both generators side by side (gen=scan, the one used there, and
// gen=buckets).
func BenchmarkGenerate(b *testing.B) {
	for _, d := range edfbench.Dists {
		for _, n := range []int{10, 100, 1000} {
			w := d.Weights(n)
			gens := []mode{modeRing}
			if n <= scanMaxN {
				gens = append(gens, modeBuckets)
			}
			for _, m := range gens {
				name := fmt.Sprintf("w=%s/n=%d", d.Name, n)
				if len(gens) > 1 {
					name += "/gen=scan"
					if m == modeBuckets {
						name = fmt.Sprintf("w=%s/n=%d/gen=buckets", d.Name, n)
					}
				}
				b.Run(name, func(b *testing.B) {
					s, _ := New(entriesOf(make([]int, n), w), withMode(m))
					if s.ring == nil {
						b.Skip("no ring")
					}
					r := s.ring
					words := r.slotWords(0)
					for b.Loop() {
						r.gen.fill(words, uint(r.pack))
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N<<r.shift), "ns/point")
				})
			}
		}
	}
}

// BenchmarkFirstPeriod measures the picks of a new scheduler's first
// period, ns per pick: what every pick costs when the scheduler is
// rebuilt more often than its period is picked through. A lazily filled
// table (impl=auto) generates its chunks on the way; impl=ring is the
// ring of generated blocks over the same weights, side by side.
func BenchmarkFirstPeriod(b *testing.B) {
	for _, d := range edfbench.Dists[:3] {
		for _, n := range edfbench.Sizes {
			w := d.Weights(n)
			for _, m := range []mode{modeAuto, modeRing} {
				name := "auto"
				if m == modeRing {
					name = "ring"
				}
				b.Run(fmt.Sprintf("w=%s/impl=%s/n=%d", d.Name, name, n), func(b *testing.B) {
					e := entriesOf(make([]int, n), w)
					s, _ := New(e, withMode(m))
					picks := min(s.Period(), 1<<22)
					var sum int
					for b.Loop() {
						s, _ := New(e, withMode(m))
						for range picks {
							sum += s.Pick()
						}
					}
					sinkInt = sum
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(uint64(b.N)*picks), "ns/pick")
				})
			}
		}
	}
}

var sinkInt int
