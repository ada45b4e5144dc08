package edf

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/internal/edfbench"
)

// BenchmarkGenerate measures the generators alone: ns per point, blocks
// of 64 picks of 8 bits.
func BenchmarkGenerate(b *testing.B) {
	for _, d := range edfbench.Dists {
		for _, n := range []int{10, 30, 100} {
			w := d.Weights(n)
			s, _ := New(entriesOf(make([]int, n), w), withMode(modeRing))
			for _, sl := range []int{16, 32, 64} {
				b.Run(fmt.Sprintf("w=%s/n=%d/slice=%d", d.Name, n, sl), func(b *testing.B) {
					var g generator
					g.init(s.weights, s.maxW, s.period, max(n, sl))
					words := make([]atomic.Uint64, 8)
					for b.Loop() {
						g.fill(words, 3)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/point")
				})
			}
		}
	}
}
