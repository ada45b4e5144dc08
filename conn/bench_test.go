package conn

import (
	"context"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// readyChannel returns a channel whose pick_first picker is READY on a
// local server, and that picker.
func readyChannel(b *testing.B) (*Channel, lb.Picker) {
	s := startServer(b)
	c, r, _ := newTestChannel(b)
	r.update(b, resolver.State{Addresses: addrs(s.addr)})
	pickAddr(b, c)
	return c, c.gen.Load().picker
}

// BenchmarkPick compares Channel.Pick on the READY path with calling the
// policy's picker directly: impl=channel minus impl=picker is what the
// channel adds (target: 0 allocs and at most +25 ns).
func BenchmarkPick(b *testing.B) {
	c, p := readyChannel(b)
	ctx := context.Background()
	b.Run("impl=picker", func(b *testing.B) {
		b.ReportAllocs()
		info := lb.PickInfo{Ctx: ctx}
		for b.Loop() {
			if _, err := p.Pick(info); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=channel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Pick(ctx, PickOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A request's whole balancing cost: the pick, and Finish counting it
	// for the snapshot and the per-endpoint metrics.
	b.Run("impl=channel+finish", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := c.Pick(ctx, PickOptions{})
			if err != nil {
				b.Fatal(err)
			}
			r.Finish(lb.DoneInfo{})
		}
	})
}

// BenchmarkPickParallel is BenchmarkPick under b.RunParallel.
func BenchmarkPickParallel(b *testing.B) {
	c, p := readyChannel(b)
	ctx := context.Background()
	b.Run("impl=picker", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			info := lb.PickInfo{Ctx: ctx}
			for pb.Next() {
				if _, err := p.Pick(info); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("impl=channel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Pick(ctx, PickOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
