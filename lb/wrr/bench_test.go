package wrr_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
	"github.com/lbkit/lbkit/lb/wrr"
)

// rrPicker is the floor a weighted picker can be measured against: plain
// round robin over fixed results, one atomic add per pick.
type rrPicker struct {
	results []lb.PickResult
	next    atomic.Uint64
}

func (p *rrPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	return p.results[(p.next.Add(1)-1)%uint64(len(p.results))], nil
}

// benchAddrs returns n distinct addresses with weights drawn from 1..maxW
// with a fixed seed.
func benchAddrs(n int, maxW uint32) []resolver.Address {
	r := rand.New(rand.NewPCG(42, uint64(n)))
	out := make([]resolver.Address, n)
	for i := range out {
		a := resolver.Address{Addr: fmt.Sprintf("10.%d.%d.%d:443", i>>16, (i>>8)&0xff, i&0xff)}
		out[i] = weight.Set(a, 1+r.Uint32N(maxW))
	}
	return out
}

// BenchmarkPick measures the READY picker's Pick over n endpoints with
// weights 1..100 against plain round robin. Both are called the way a
// channel calls its current picker: loaded through an atomic.Pointer and
// called through the lb.Picker interface, from every core at once.
func BenchmarkPick(b *testing.B) {
	info := lb.PickInfo{Ctx: context.Background(), Method: "/pkg.Service/Method"}
	for _, n := range []int{10, 100, 1000} {
		e := newEnv(b, nil)
		scs := e.readyAll(benchAddrs(n, 100)...)
		baseline := &rrPicker{}
		for _, sc := range scs {
			baseline.results = append(baseline.results, lb.PickResult{SubConn: sc})
		}
		for _, impl := range []struct {
			name   string
			picker lb.Picker
		}{
			{"wrr", e.h.State().Picker},
			{"rr-baseline", baseline},
		} {
			var current atomic.Pointer[lb.Picker]
			current.Store(&impl.picker)
			b.Run(fmt.Sprintf("impl=%s/n=%d", impl.name, n), func(b *testing.B) {
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
}

// benchCC is a minimal lb.ClientConn for the update benchmarks: unlike the
// lbtest fake it keeps no history (the fake keeps every published picker,
// whose garbage-collection cost would swamp the policy's at n = 10000). The
// benchmark calls the balancer from its own goroutine only, which is serial
// as the contract requires, and benchCC is also the tree's lb.Scheduler: a
// plain queue that the benchmark runs with drain, on the same goroutine.
type benchCC struct {
	last     lb.State
	subConns []*benchSubConn
	queue    []func()
}

// Schedule queues f for drain.
func (c *benchCC) Schedule(f func()) bool {
	c.queue = append(c.queue, f)
	return true
}

// AfterFunc is not used by weighted_round_robin.
func (c *benchCC) AfterFunc(time.Duration, func()) lb.Timer {
	panic("wrr bench: unexpected timer")
}

// drain runs the queued callbacks, and those they queue, in order.
func (c *benchCC) drain() {
	for len(c.queue) > 0 {
		f := c.queue[0]
		c.queue = c.queue[1:]
		f()
	}
}

// newBenchBalancer builds a weighted_round_robin balancer on a new benchCC.
func newBenchBalancer() (*benchCC, lb.Balancer) {
	cc := &benchCC{}
	return cc, wrr.Builder{}.Build(cc, lb.BuildOptions{Rand: rand.New(rand.NewPCG(1, 2)), Scheduler: cc}.WithDefaults())
}

type benchSubConn struct{ listener func(lb.SubConnState) }

func (*benchSubConn) Connect()  {}
func (*benchSubConn) Shutdown() {}

func (c *benchCC) NewSubConn(_ []resolver.Address, opts lb.NewSubConnOptions) (lb.SubConn, error) {
	sc := &benchSubConn{listener: opts.StateListener}
	c.subConns = append(c.subConns, sc)
	return sc, nil
}
func (c *benchCC) UpdateState(s lb.State) { c.last = s }
func (*benchCC) ResolveNow()              {}
func (*benchCC) Target() string           { return "bench" }

// BenchmarkUpdateClientConnState measures an update of n endpoints that
// changes every weight (successive updates rotate weights 1..10), the
// update the specification cares about:
//
//   - ready: every SubConn READY, so each update also builds the READY
//     picker, continuing the schedule (one pick follows each update, as
//     traffic would); the build is O(n log n) plus the edf table;
//   - connecting: every SubConn CONNECTING, so only the policy's own work
//     is measured: de-duplication, weights, the removed-endpoint sweep.
//
// The ns/addr metric stays flat as n grows when the cost is linear.
func BenchmarkUpdateClientConnState(b *testing.B) {
	info := lb.PickInfo{Ctx: context.Background()}
	for _, n := range []int{10, 1000, 10000} {
		base := benchAddrs(n, 1)
		const rotations = 10
		states := make([]lb.ClientConnState, rotations)
		for r := range states {
			addrs := make([]resolver.Address, n)
			for i, a := range base {
				addrs[i] = weight.Set(a, uint32(1+(i+r)%10))
			}
			states[r] = lb.ClientConnState{ResolverState: resolver.State{Addresses: addrs}}
		}
		for _, ready := range []bool{true, false} {
			name := "connecting"
			if ready {
				name = "ready"
			}
			var (
				cc  *benchCC
				bal lb.Balancer
			)
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				if bal == nil { // set up once, not for every b.N
					cc, bal = newBenchBalancer()
					if err := bal.UpdateClientConnState(states[0]); err != nil {
						b.Fatal(err)
					}
					for _, sc := range cc.subConns {
						sc.listener(lb.SubConnState{ConnectivityState: lb.Connecting})
						if ready {
							sc.listener(lb.SubConnState{ConnectivityState: lb.Ready})
						}
					}
					cc.drain()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if err := bal.UpdateClientConnState(states[i%rotations]); err != nil {
						b.Fatal(err)
					}
					cc.drain()
					if ready {
						cc.last.Picker.Pick(info)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/addr")
			})
			if bal != nil {
				bal.Close()
			}
		}
	}
}

// BenchmarkReadyBurst measures n endpoints becoming READY, each report a
// callback of its own on the tree's scheduler, from a policy that is
// already READY through one endpoint:
//
//   - burst: every report is queued before the first runs, as when many
//     connections complete while the serializer is busy. The picker
//     rebuilds coalesce into one, so the cost is O(n): the ns/addr metric
//     stays flat as n grows;
//   - one-by-one: each report runs, with its rebuild, before the next is
//     queued, the worst case: n rebuilds of O(n) each, O(n^2) in all.
func BenchmarkReadyBurst(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		addrs := benchAddrs(n+1, 10)
		for _, mode := range []string{"burst", "one-by-one"} {
			if mode == "one-by-one" && n > 1000 {
				continue // seconds per op: the quadratic shape shows by n = 1000
			}
			b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					b.StopTimer()
					cc, bal := newBenchBalancer()
					if err := bal.UpdateClientConnState(lb.ClientConnState{ResolverState: resolver.State{Addresses: addrs}}); err != nil {
						b.Fatal(err)
					}
					cc.subConns[0].listener(lb.SubConnState{ConnectivityState: lb.Ready})
					cc.drain()
					b.StartTimer()
					for _, sc := range cc.subConns[1:] {
						cc.Schedule(func() { sc.listener(lb.SubConnState{ConnectivityState: lb.Ready}) })
						if mode == "one-by-one" {
							cc.drain()
						}
					}
					cc.drain()
					b.StopTimer()
					if cc.last.ConnectivityState != lb.Ready {
						b.Fatalf("state %v after every endpoint became READY", cc.last.ConnectivityState)
					}
					bal.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/addr")
			})
		}
	}
}
