package roundrobin_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// mutexRotation is the baseline: the obvious rotation, an index behind a
// mutex.
type mutexRotation struct {
	mu      sync.Mutex
	next    int
	results []lb.PickResult
}

func (p *mutexRotation) Pick(lb.PickInfo) (lb.PickResult, error) {
	p.mu.Lock()
	r := p.results[p.next]
	p.next = (p.next + 1) % len(p.results)
	p.mu.Unlock()
	return r, nil
}

// BenchmarkPick measures the READY picker's Pick over n endpoints against
// the mutex baseline, from every core at once, called the way a channel
// calls its current picker: loaded through an atomic.Pointer.
func BenchmarkPick(b *testing.B) {
	info := lb.PickInfo{Ctx: context.Background()}
	for _, n := range []int{10, 1000} {
		h := lbtest.New(b)
		h.Build(roundrobin.Builder{})
		as := make([]resolver.Address, n)
		for i := range as {
			as[i] = resolver.Address{Addr: fmt.Sprintf("10.0.%d.%d:443", i>>8, i&0xff)}
		}
		if err := h.UpdateAddresses(nil, as...); err != nil {
			b.Fatal(err)
		}
		baseline := &mutexRotation{}
		for _, sc := range h.CC.SubConns() {
			sc.Ready()
			baseline.results = append(baseline.results, lb.PickResult{SubConn: sc})
		}
		for _, impl := range []struct {
			name   string
			picker lb.Picker
		}{{"round_robin", h.State().Picker}, {"mutex-baseline", baseline}} {
			var current atomic.Pointer[lb.Picker]
			current.Store(&impl.picker)
			b.Run(fmt.Sprintf("impl=%s/n=%d", impl.name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if r, err := (*current.Load()).Pick(info); err != nil || r.SubConn == nil {
							panic("pick failed")
						}
					}
				})
			})
		}
	}
}
