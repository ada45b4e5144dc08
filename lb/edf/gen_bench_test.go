package edf

import (
	"fmt"
	"testing"

	"github.com/lbkit/lbkit/internal/edfbench"
)

// BenchmarkGenerate measures the ring's generator alone, one block at a
// time as the ring fills its slots: ns per point.
func BenchmarkGenerate(b *testing.B) {
	for _, d := range edfbench.Dists {
		for _, n := range []int{10, 100, 1000} {
			w := d.Weights(n)
			b.Run(fmt.Sprintf("w=%s/n=%d", d.Name, n), func(b *testing.B) {
				s, _ := New(entriesOf(make([]int, n), w), withMode(modeRing))
				r := s.ring
				words := r.slotWords(0)
				for b.Loop() {
					r.gen.fill(words, r.pack)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N<<r.shift), "ns/point")
			})
		}
	}
}
