package consistenthash

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// readyPolicy builds policy over n endpoints with config, and makes every
// endpoint READY.
func readyPolicy(b *testing.B, name, config string, n int) lb.Picker {
	h := lbtest.New(b, lbtest.WithRegistry(lbtest.NewRegistry(RingHashBuilder{}, MaglevBuilder{})))
	_, cfg := h.BuildPolicy(name, config)
	if err := h.UpdateAddresses(cfg, toAddrs(addrsN(n))...); err != nil {
		b.Fatal(err)
	}
	// Every endpoint READY at once, as after a burst of connections; one
	// picker (the states are set from inside, which no SubConn report
	// could do in one step).
	bal := h.Balancer.(*balancer)
	h.Do(func() {
		for _, ep := range bal.list {
			bal.setState(ep, lb.Ready)
		}
		bal.changed(true)
	})
	return h.State().Picker
}

// addrsN returns n distinct addresses.
func addrsN(n int) []string {
	as := make([]string, n)
	for i := range as {
		as[i] = fmt.Sprintf("10.%d.%d.%d:443", i>>16, (i>>8)&255, i&255)
	}
	return as
}

// BenchmarkPick: a READY pick by a request's hash, ring_hash (default ring,
// binary search) beside maglev (default table, one modulo), 0 allocs. The
// hashes are random (splitmix64 of a counter), as the hashes of real keys
// are to the CPU's branch predictor, each in a PickInfo of its own, as a
// transport builds one per request: writing the hash into one PickInfo
// reused across picks measures a stall of the benchmark's own (lb.PickInfo
// no longer fits in registers, so each call copies it through memory in
// 16-byte loads, and the one spanning the 8-byte store of Hash waits for
// that store, about 10 ns per pick).
func BenchmarkPick(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		for _, p := range []struct{ name, config string }{
			{RingHashName, `{"maxRingSize": 4096}`},
			{MaglevName, `{}`},
		} {
			b.Run(fmt.Sprintf("%s/n=%d", p.name, n), func(b *testing.B) {
				picker := readyPolicy(b, p.name, p.config, n)
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if _, err := picker.Pick(hashed(mix(uint64(i) * golden))); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPickSideBySide: maglev's READY pick beside ring_hash's (the
// policies of BenchmarkPick), interleaved in chunks of 1,000 picks of the
// same hashes, each policy's time its fastest chunk: the chunk least
// disturbed by other load on the machine, which a mean over a busy
// machine is not. Reports both in ns per pick and maglev/ring.
func BenchmarkPickSideBySide(b *testing.B) {
	const chunk = 1000
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			pickers := []lb.Picker{readyPolicy(b, RingHashName, `{"maxRingSize": 4096}`, n), readyPolicy(b, MaglevName, `{}`, n)}
			best := []time.Duration{time.Hour, time.Hour}
			b.ResetTimer()
			for i := 0; i < b.N; i += chunk {
				for k, p := range pickers {
					start := time.Now()
					for j := range chunk {
						if _, err := p.Pick(hashed(mix(uint64(i+j) * golden))); err != nil {
							b.Fatal(err)
						}
					}
					best[k] = min(best[k], time.Since(start))
				}
			}
			ring, maglev := float64(best[0])/chunk, float64(best[1])/chunk
			b.ReportMetric(ring, "ring-ns/pick")
			b.ReportMetric(maglev, "maglev-ns/pick")
			b.ReportMetric(maglev/ring, "maglev/ring")
		})
	}
}

// BenchmarkBuild: building the table for 10,000 endpoints of weights 1 to
// 7: the default ring (4,096 entries), a ring of 100,000, the ring of
// entriesPerWeight 10 (399,940 entries), and the default Maglev table.
func BenchmarkBuild(b *testing.B) {
	nodes := make([]ringNode, 10000)
	for i, a := range addrsN(len(nodes)) {
		nodes[i] = ringNode{hashKey: a, weight: uint32(1 + i%7)}
	}
	b.Run("ring/4096", func(b *testing.B) {
		for range b.N {
			buildRing(nodes, DefaultMinRingSize, DefaultMaxRingSize)
		}
	})
	b.Run("ring/100000", func(b *testing.B) {
		for range b.N {
			buildRing(nodes, 100000, 100000)
		}
	})
	b.Run("ring/entriesPerWeight=10", func(b *testing.B) {
		for range b.N {
			_, _ = buildFixedRing(nodes, 10, DefaultMinRingSize, RingSizeLimit) // 399,940 entries: fits
		}
	})
	b.Run("maglev/65537", func(b *testing.B) {
		for range b.N {
			buildMaglev(nodes, DefaultMaglevTableSize)
		}
	})
}
