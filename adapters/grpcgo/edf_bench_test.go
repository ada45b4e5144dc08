package grpcgo_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/balancer"

	"github.com/lbkit/lbkit/lb/edf"
	"github.com/lbkit/lbkit/lb/edf/edfbench"
)

// BenchmarkEDFPick measures one pick, at the weight ranges and sizes of
// lb/edf's BenchmarkPick, from lbkit's EDF scheduler (impl=edf), the
// mutex-and-heap EDF baseline (impl=heap-baseline) and grpc-go's
// weighted_round_robin picker (impl=grpc-wrr), side by side in one run.
//
// grpc-go's scheduler is internal; its picker is driven through the public
// balancer API on a fake ClientConn. Its weights can only come from ORCA
// load reports, so each endpoint is sent a per-call report (the DoneInfo of
// a pick) with rps_fractional = weight and cpu_utilization = 1, which
// grpc-go turns into exactly that weight; with blackoutPeriod 0 and
// weightUpdatePeriod 100ms (its minimum) the picker switches to those
// weights within 100ms of real time. Only Pick is timed: grpc-go's Pick
// allocates the Done closure it returns, which the loop does not call.
// grpc-wrr stops at n = 10,000 (see benchEDF).
func BenchmarkEDFPick(b *testing.B) { benchEDF(b, false) }

// BenchmarkEDFPickParallel is BenchmarkEDFPick from GOMAXPROCS goroutines.
func BenchmarkEDFPickParallel(b *testing.B) { benchEDF(b, true) }

type intPicker interface{ Pick() int }

// grpcPicker adapts a balancer.Picker to intPicker.
type grpcPicker struct{ p balancer.Picker }

var pickInfo = balancer.PickInfo{Ctx: context.Background(), FullMethodName: "/lbkit.test.Who/Name"}

func (g grpcPicker) Pick() int {
	r, err := g.p.Pick(pickInfo)
	if err != nil {
		panic(err)
	}
	return r.SubConn.(*fakeSubConn).id
}

var edfSink atomic.Int64

func benchEDF(b *testing.B, parallel bool) {
	for _, d := range edfbench.Dists {
		for _, impl := range []string{"edf", "heap-baseline", "grpc-wrr"} {
			for _, n := range edfbench.Sizes {
				if impl == "grpc-wrr" && n > 10000 {
					// grpc-go's endpointsharding rebuilds its picker over
					// all endpoints on every endpoint's state change, so
					// making 100,000 endpoints READY is O(n^2): hours.
					continue
				}
				w := d.Weights(n)
				var p intPicker // built on the first run of the sub-benchmark only
				b.Run(fmt.Sprintf("w=%s/impl=%s/n=%d", d.Name, impl, n), func(b *testing.B) {
					if p == nil {
						p = newIntPicker(b, impl, w)
					}
					b.ReportAllocs()
					b.ResetTimer()
					if parallel {
						b.RunParallel(func(pb *testing.PB) {
							var s int
							for pb.Next() {
								s += p.Pick()
							}
							edfSink.Add(int64(s))
						})
						return
					}
					var s int
					for range b.N {
						s += p.Pick()
					}
					edfSink.Add(int64(s))
				})
			}
		}
	}
}

// grpcPickers caches grpc-go pickers by weights and size for the whole run
// (serial, parallel and every -count): making 10,000 endpoints READY takes
// grpc-go about a minute. TestMain closes them.
var grpcPickers struct {
	sync.Mutex
	byKey  map[string]intPicker
	closes []func()
}

func closeGRPCPickers() {
	grpcPickers.Lock()
	defer grpcPickers.Unlock()
	for _, c := range grpcPickers.closes {
		c()
	}
	grpcPickers.byKey, grpcPickers.closes = nil, nil
}

func newIntPicker(b *testing.B, impl string, w []uint32) intPicker {
	switch impl {
	case "edf":
		e := make([]edf.Entry[int], len(w))
		for i, x := range w {
			e[i] = edf.Entry[int]{Item: i, Weight: x}
		}
		s, err := edf.New(e)
		if err != nil {
			b.Fatal(err)
		}
		return s
	case "heap-baseline":
		return edfbench.NewHeapBaseline(w)
	}
	key := fmt.Sprint(w)
	grpcPickers.Lock()
	defer grpcPickers.Unlock()
	if p, ok := grpcPickers.byKey[key]; ok {
		return p
	}
	p := weightedGRPCPicker(b, w, func(c func()) { grpcPickers.closes = append(grpcPickers.closes, c) })
	if grpcPickers.byKey == nil {
		grpcPickers.byKey = make(map[string]intPicker)
	}
	grpcPickers.byKey[key] = p
	return p
}

// weightedGRPCPicker returns grpc-go's weighted_round_robin READY picker
// over len(w) endpoints, after it has taken up weights w from ORCA
// per-call load reports.
func weightedGRPCPicker(b *testing.B, w []uint32, closeWith func(func())) intPicker {
	p := readyPicker(b, balancer.Get("weighted_round_robin"), len(w),
		`{"blackoutPeriod": "0s", "weightUpdatePeriod": "0.1s"}`, closeWith)
	report := func() {
		// Every endpoint gets a report: pick until each has had one.
		done := make([]bool, len(w))
		for left := len(w); left > 0; {
			r, err := p.Pick(pickInfo)
			if err != nil {
				b.Fatal(err)
			}
			i := endpointIndex(b, r.SubConn)
			if r.Done != nil {
				r.Done(balancer.DoneInfo{ServerLoad: &v3orcapb.OrcaLoadReport{
					RpsFractional: float64(w[i]), CpuUtilization: 1,
				}})
			}
			if !done[i] {
				done[i], left = true, left-1
			}
		}
	}
	report()
	// Wait for the picker's next weight update to take the weights up:
	// the heaviest endpoint must then get more picks than the lightest.
	heavy, light := 0, 0
	for i := range w {
		if w[i] > w[heavy] {
			heavy = i
		}
		if w[i] < w[light] {
			light = i
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for w[heavy] != w[light] {
		time.Sleep(150 * time.Millisecond) // grpc-go updates weights on a real-time ticker
		counts := make(map[int]int)
		for range 4 * len(w) {
			r, err := p.Pick(pickInfo)
			if err != nil {
				b.Fatal(err)
			}
			counts[endpointIndex(b, r.SubConn)]++
		}
		if counts[heavy] > counts[light] {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("grpc-go weighted_round_robin did not take up the weights: %d picks of the heaviest, %d of the lightest", counts[heavy], counts[light])
		}
		report()
	}
	return grpcPicker{p}
}

// endpointIndex returns the index of the endpoint a SubConn of readyPicker
// was created for.
func endpointIndex(b *testing.B, sc balancer.SubConn) int {
	f, ok := sc.(*fakeSubConn)
	if !ok || len(f.addrs) == 0 {
		b.Fatalf("picked %v, want a fakeSubConn", sc)
	}
	// readyPicker's addresses are 10.a.b.c:443 for index a<<16 | b<<8 | c.
	parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(f.addrs[0].Addr, "10."), ":443"), ".")
	i := 0
	for _, s := range parts {
		x, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("address %q: %v", f.addrs[0].Addr, err)
		}
		i = i<<8 | x
	}
	return i
}
