package grpcgo_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/lbkit/lbkit/lb/edf"
)

// a58Load is the load report of endpoint i of an A58-shaped fleet: qps
// from 50 to 150 and CPU utilization from 0.2 to 0.9, drawn with a fixed
// seed, so weights qps/util spread over about 1:13 as floats.
func a58Load(n int) []*v3orcapb.OrcaLoadReport {
	r := rand.New(rand.NewPCG(58, uint64(n)))
	out := make([]*v3orcapb.OrcaLoadReport, n)
	for i := range out {
		out[i] = &v3orcapb.OrcaLoadReport{RpsFractional: 50 + 100*r.Float64(), CpuUtilization: 0.2 + 0.7*r.Float64()}
	}
	return out
}

// BenchmarkA58Rebuild measures a weighted_round_robin update with gRFC
// A58 weights from load reports in force, over 1,000 and 10,000 READY
// endpoints, side by side in one run:
//
//   - impl=lbkit: lbkit's weighted_round_robin behind this module's bridge,
//     and impl=grpc-wrr: grpc-go's weighted_round_robin, each on the same
//     fake ClientConn, given an UpdateClientConnState with unchanged
//     endpoints. grpc-go rebuilds its scheduler only inside a new picker
//     (its weight update ticker is internal), so this is the public path
//     to its scheduler update: both sides redo the endpoint bookkeeping,
//     read every endpoint's weight and build a new scheduler and picker.
//   - impl=lbkit-edf: the scheduler part alone of lbkit's rebuild, what
//     the weight update timer does beyond reading the weights:
//     edf.NewFrom over the A58 weights scaled as the policy scales them.
//
// Weights are taken up before timing: every endpoint gets a per-call
// report (blackoutPeriod 0) and the balancer's weight update runs.
func BenchmarkA58Rebuild(b *testing.B) {
	// live is the balancer of the sub-benchmark running, closed when the
	// next one starts: a balancer left open would run grpc-go's real-time
	// weight ticker (and allocate) during the next one's measurement.
	var live balancer.Balancer
	closeLive := func() {
		if live != nil {
			live.Close()
			live = nil
		}
	}
	b.Cleanup(closeLive)
	for _, n := range []int{1000, 10000} {
		load := a58Load(n)
		for _, impl := range []string{"lbkit", "grpc-wrr", "lbkit-edf"} {
			// Built on the sub-benchmark's first run only: the testing
			// package runs it again for each b.N it tries (and for each
			// -count), and grpc-go's set-up of 10,000 endpoints takes a
			// minute or two.
			var (
				bal balancer.Balancer
				ccs balancer.ClientConnState
			)
			b.Run(fmt.Sprintf("impl=%s/n=%d", impl, n), func(sub *testing.B) {
				if impl == "lbkit-edf" {
					closeLive()
					benchEDFNewFrom(sub, load)
					return
				}
				if bal == nil || live != bal {
					closeLive()
					name := "weighted_round_robin"
					if impl == "lbkit" {
						name = mockWRRName
					}
					bal, ccs = a58Balancer(sub, balancer.Get(name), load)
					live = bal
				}
				sub.ReportAllocs()
				sub.ResetTimer()
				for range sub.N {
					if err := bal.UpdateClientConnState(ccs); err != nil {
						sub.Fatal(err)
					}
				}
			})
		}
	}
}

// benchEDFNewFrom times edf.NewFrom over load's A58 weights, scaled to
// integers with the heaviest at 65,536, continuing the previous schedule.
func benchEDFNewFrom(b *testing.B, load []*v3orcapb.OrcaLoadReport) {
	raw := make([]float64, len(load))
	maxW := 0.0
	for i, l := range load {
		raw[i] = l.GetRpsFractional() / l.GetCpuUtilization()
		maxW = max(maxW, raw[i])
	}
	entries := make([]edf.Entry[int], len(load))
	for i, w := range raw {
		entries[i] = edf.Entry[int]{Item: i, Weight: uint32(max(1, math.Round(w/maxW*65536)))}
	}
	prev, err := edf.New(entries)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s, err := edf.NewFrom(prev, entries)
		if err != nil {
			b.Fatal(err)
		}
		s.Pick()
		prev = s
	}
}

// a58Balancer builds builder's balancer on a fake ClientConn with
// len(load) READY endpoints whose weights come from load, and returns it
// with the update that lists them. The caller closes it.
func a58Balancer(b *testing.B, builder balancer.Builder, load []*v3orcapb.OrcaLoadReport) (balancer.Balancer, balancer.ClientConnState) {
	b.Helper()
	n := len(load)
	cc := newFakeCC()
	cc.lastOnly = true // n pickers of n endpoints each would be gigabytes at n = 10,000
	bal := builder.Build(cc, balancer.BuildOptions{})
	parsed, err := builder.(balancer.ConfigParser).ParseConfig(json.RawMessage(`{"blackoutPeriod": "0s", "weightUpdatePeriod": "0.1s"}`))
	if err != nil {
		b.Fatal(err)
	}
	ccs := balancer.ClientConnState{BalancerConfig: parsed}
	for i := range n {
		a := resolver.Address{Addr: fmt.Sprintf("10.%d.%d.%d:443", i>>16, (i>>8)&0xff, i&0xff)}
		ccs.ResolverState.Addresses = append(ccs.ResolverState.Addresses, a)
		ccs.ResolverState.Endpoints = append(ccs.ResolverState.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{a}})
	}
	if err := bal.UpdateClientConnState(ccs); err != nil {
		b.Fatal(err)
	}
	cc.readyAll()
	if builder.Name() == mockWRRName {
		// lbkit's bridge publishes from the balancer's serializer: wait
		// for the picker over every READY endpoint (grpc-go's publishes
		// within readyAll).
		wrrClock.settle(b)
	}
	s, _ := cc.lastState()
	if s.ConnectivityState != connectivity.Ready {
		b.Fatalf("%s: state %v with every SubConn READY", builder.Name(), s.ConnectivityState)
	}
	// Every endpoint reports its load through a pick's Done.
	reported := make([]bool, n)
	for left := n; left > 0; {
		r, err := s.Picker.Pick(pickInfo)
		if err != nil {
			b.Fatal(err)
		}
		i := endpointIndex(b, r.SubConn)
		if r.Done != nil {
			r.Done(balancer.DoneInfo{ServerLoad: load[i]})
		}
		if !reported[i] {
			reported[i], left = true, left-1
		}
	}
	// Let the weight update run: lbkit's on the mock clock, grpc-go's on
	// its real-time ticker.
	if builder.Name() == mockWRRName {
		wrrClock.settle(b)
		wrrClock.advance(b, 100*time.Millisecond)
	} else {
		time.Sleep(150 * time.Millisecond)
	}
	// The measured updates carry a weight update period of an hour, so
	// that grpc-go's pickers, each with its own real-time ticker, do not
	// rebuild their schedulers during the measurement (lbkit's timer is on
	// the mock clock, which does not move): each update is timed alone.
	if ccs.BalancerConfig, err = builder.(balancer.ConfigParser).ParseConfig(json.RawMessage(`{"blackoutPeriod": "0s", "weightUpdatePeriod": "3600s"}`)); err != nil {
		b.Fatal(err)
	}
	return bal, ccs
}
