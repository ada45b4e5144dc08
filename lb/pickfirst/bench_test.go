package pickfirst_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/resolver"
)

// atomicPicker is the floor a picker can be measured against: its Pick is
// one atomic.Pointer load returning a fixed result.
type atomicPicker struct{ result atomic.Pointer[lb.PickResult] }

func (p *atomicPicker) Pick(lb.PickInfo) (lb.PickResult, error) { return *p.result.Load(), nil }

// BenchmarkPick measures the READY picker's Pick against atomicPicker. Both
// are called the way a channel calls its current picker: loaded through an
// atomic.Pointer and called through the lb.Picker interface, from every
// core at once.
//
// Measured (2-core VM, Go 1.26, medians of 6): pickfirst 1.12 ns/op and 0
// allocs/op, atomic-baseline 1.10 ns/op, so the ratio is 1.02x (the target
// is 1.5x). See docs/performance.md.
func BenchmarkPick(b *testing.B) {
	e := newEnv(b)
	e.mustUpdate("a")
	e.h.SubConn(0).Ready()
	baseline := &atomicPicker{}
	baseline.result.Store(&lb.PickResult{SubConn: e.h.SubConn(0)})
	info := lb.PickInfo{Ctx: context.Background(), Method: "/pkg.Service/Method"}

	for _, impl := range []struct {
		name   string
		picker lb.Picker
	}{
		{"pickfirst", e.h.State().Picker},
		{"atomic-baseline", baseline},
	} {
		var current atomic.Pointer[lb.Picker]
		current.Store(&impl.picker)
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := (*current.Load()).Pick(info)
					if err != nil || r.SubConn == nil {
						panic("pick failed")
					}
				}
			})
		})
	}
}

// BenchmarkUpdateClientConnState measures an update of n distinct addresses
// while CONNECTING: de-duplication, the removed-address sweep and the
// restart of the pass. Successive updates rotate the list by one, so each
// starts its pass at a different address. The ns/addr metric stays flat
// as n grows when the cost is linear.
func BenchmarkUpdateClientConnState(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			e := newEnv(b)
			list := make([]resolver.Address, 2*n)
			for i := range n {
				list[i] = resolver.Address{Addr: fmt.Sprintf("10.%d.%d.%d:443", i>>16, (i>>8)&0xff, i&0xff)}
				list[n+i] = list[i]
			}
			states := make([]lb.ClientConnState, n)
			for i := range states {
				states[i] = lb.ClientConnState{
					ResolverState:  resolver.State{Addresses: list[i : i+n]},
					BalancerConfig: pickfirst.Config{},
				}
			}
			bal := e.h.Balancer
			b.ReportAllocs()
			b.ResetTimer()
			// One serialized call runs the whole loop: the policy's cost,
			// not the harness's hop onto the serializer, is measured.
			e.h.Do(func() {
				for i := range b.N {
					if err := bal.UpdateClientConnState(states[i%n]); err != nil {
						panic(err)
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/addr")
		})
	}
}
