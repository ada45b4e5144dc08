package grpcgo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	_ "google.golang.org/grpc/balancer/roundrobin"         // grpc-go's round_robin, the baseline
	_ "google.golang.org/grpc/balancer/weightedroundrobin" // grpc-go's weighted_round_robin, the baseline
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/lbkit/lbkit/adapters/grpcgo"
)

// BenchmarkUnaryRPC measures unary RPC throughput over loopback, with many
// RPCs in flight (RunParallel), for grpc-go's policies and the lbkit ones
// that do the same job, side by side. Every RPC goes through the channel's
// picker; the servers are the same three for every policy.
func BenchmarkUnaryRPC(b *testing.B) {
	backends := []*backend{startBackend(b, "a"), startBackend(b, "b"), startBackend(b, "c")}
	var addrs []resolver.Address
	var names []string
	for _, be := range backends {
		addrs = append(addrs, be.address())
		names = append(names, be.name)
	}
	for _, tc := range []struct {
		policy string
		serves []string // servers that must answer before measuring
	}{
		{"pick_first", names[:1]},
		{grpcgo.PickFirstName, names[:1]},
		{"round_robin", names},
		{grpcgo.WeightedRoundRobinName, names}, // no weights: all equal
	} {
		b.Run("policy="+tc.policy, func(b *testing.B) {
			c := newClient(b, resolver.State{Addresses: addrs},
				fmt.Sprintf(`{"loadBalancingConfig": [{%q: {}}]}`, tc.policy))
			c.waitUntilServed(b, tc.serves...)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := c.who(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkUnaryRPCPaired compares each lbkit policy with its grpc-go
// counterpart in one process, alternating batches of RPCs between the two
// channels (ABBA order), so that drift of the machine's speed hits both
// alike. It reports each side's time per RPC and their throughput ratio
// (grpc-go's time over lbkit's: 1 means equal, above 1 means lbkit is
// faster). Its ns/op is the time of one RPC on each channel.
func BenchmarkUnaryRPCPaired(b *testing.B) {
	backends := []*backend{startBackend(b, "a"), startBackend(b, "b"), startBackend(b, "c")}
	var addrs []resolver.Address
	var names []string
	for _, be := range backends {
		addrs = append(addrs, be.address())
		names = append(names, be.name)
	}
	for _, tc := range []struct {
		grpc, lbkit string
		serves      []string
	}{
		{"pick_first", grpcgo.PickFirstName, names[:1]},
		{"round_robin", grpcgo.WeightedRoundRobinName, names},
	} {
		b.Run(fmt.Sprintf("pair=%s_vs_%s", tc.grpc, tc.lbkit), func(b *testing.B) {
			clients := [2]*client{}
			for i, policy := range []string{tc.grpc, tc.lbkit} {
				clients[i] = newClient(b, resolver.State{Addresses: addrs},
					fmt.Sprintf(`{"loadBalancingConfig": [{%q: {}}]}`, policy))
				clients[i].waitUntilServed(b, tc.serves...)
			}
			const batch = 256
			var spent [2]time.Duration
			b.ResetTimer()
			for done, round := 0, 0; done < b.N; done, round = done+batch, round+1 {
				first := round % 2
				if round%4 >= 2 {
					first = 1 - first // ABBA: 0 1, 1 0, 1 0, 0 1, ...
				}
				for _, i := range []int{first, 1 - first} {
					spent[i] += rpcBatch(b, clients[i], batch)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(spent[0].Nanoseconds())/n, "grpc-ns/rpc")
			b.ReportMetric(float64(spent[1].Nanoseconds())/n, "lbkit-ns/rpc")
			b.ReportMetric(float64(spent[0])/float64(spent[1]), "ratio")
		})
	}
}

// rpcBatch makes n RPCs on c from GOMAXPROCS goroutines and returns how
// long they took.
func rpcBatch(b *testing.B, c *client, n int) time.Duration {
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := w; i < n; i += workers {
				if _, err := c.who(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkPicker measures one pick (and its Done, when the picker returns
// one, as the channel calls it) from the READY picker of each policy with n
// READY SubConns, through grpc-go's public balancer API on a fake
// ClientConn. grpc-go's weighted_round_robin gets no ORCA load reports, so
// it uses equal weights; so does lbkit's (no weight attribute).
func BenchmarkPicker(b *testing.B) {
	impls := []struct {
		name    string
		builder balancer.Builder
	}{
		{"grpc_round_robin", balancer.Get("round_robin")},
		{"grpc_weighted_round_robin", balancer.Get("weighted_round_robin")},
		{"lbkit_weighted_round_robin", balancer.Get(grpcgo.WeightedRoundRobinName)},
	}
	for _, impl := range impls {
		for _, n := range []int{10, 100, 1000, 10000} {
			var p balancer.Picker // built on the first run of the sub-benchmark only
			b.Run(fmt.Sprintf("impl=%s/n=%d", impl.name, n), func(b *testing.B) {
				if p == nil {
					p = readyPicker(b, impl.builder, n, `{}`, b.Cleanup)
				}
				info := balancer.PickInfo{Ctx: context.Background(), FullMethodName: "/lbkit.test.Who/Name"}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					r, err := p.Pick(info)
					if err != nil {
						b.Fatal(err)
					}
					if r.Done != nil {
						r.Done(balancer.DoneInfo{})
					}
				}
			})
		}
	}
}

// readyPicker builds the policy with config cfg (JSON) on a fake ClientConn
// with n endpoints, makes every SubConn READY, and returns the READY picker.
// The balancer's Close is handed to closeWith (b.Cleanup, usually).
func readyPicker(b *testing.B, builder balancer.Builder, n int, cfg string, closeWith func(func())) balancer.Picker {
	b.Helper()
	cc := newFakeCC()
	// Keep only the last state: a balancer that publishes once per
	// endpoint would leave n pickers of n endpoints each behind
	// (gigabytes at n = 10,000, for the GC to scan).
	cc.lastOnly = true
	bal := builder.Build(cc, balancer.BuildOptions{})
	closeWith(bal.Close)
	var ccs balancer.ClientConnState
	if cp, ok := builder.(balancer.ConfigParser); ok {
		parsed, err := cp.ParseConfig(json.RawMessage(cfg))
		if err != nil {
			b.Fatal(err)
		}
		ccs.BalancerConfig = parsed
	}
	for i := range n {
		a := resolver.Address{Addr: fmt.Sprintf("10.%d.%d.%d:443", i>>16, (i>>8)&0xff, i&0xff)}
		ccs.ResolverState.Addresses = append(ccs.ResolverState.Addresses, a)
		ccs.ResolverState.Endpoints = append(ccs.ResolverState.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{a}})
	}
	if err := bal.UpdateClientConnState(ccs); err != nil {
		b.Fatal(err)
	}
	cc.readyAll()
	if got := len(cc.allSubConns()); got != n {
		b.Fatalf("%s created %d SubConns, want %d", builder.Name(), got, n)
	}
	s, _ := cc.lastState()
	if s.ConnectivityState != connectivity.Ready {
		b.Fatalf("%s: state %v with every SubConn READY", builder.Name(), s.ConnectivityState)
	}
	// Every SubConn is in the picker: n picks of a round robin reach
	// them all.
	seen := make(map[balancer.SubConn]bool)
	for range n {
		r, err := s.Picker.Pick(balancer.PickInfo{Ctx: context.Background()})
		if err != nil {
			b.Fatal(err)
		}
		seen[r.SubConn] = true
	}
	if len(seen) != n {
		b.Fatalf("%s: %d picks reached %d SubConns, want all", builder.Name(), n, len(seen))
	}
	return s.Picker
}
