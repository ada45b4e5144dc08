package grpcgo_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/consistenthash"
	"github.com/lbkit/lbkit/lb/lbtest"
	lbresolver "github.com/lbkit/lbkit/lb/resolver"
	lbweight "github.com/lbkit/lbkit/lb/weight"
)

// BenchmarkRingHashPick: a READY pick keyed by a request header (gRFC A76),
// grpc-go's ring_hash_experimental picker beside lbkit's, over the same
// endpoints and default ring; each reads the key from its own metadata
// (grpc-go: the outgoing context; lbkit: lb.PickInfo.Metadata). Keys cycle
// over 1,024 values, warmed so that every endpoint they land on is READY.
func BenchmarkRingHashPick(b *testing.B) {
	const cfg = `{"requestHashHeader": "x-key"}`
	for _, n := range []int{10, 100, 1000, 10000} {
		var eps []resolver.Endpoint
		var addrs []lbresolver.Address
		for i := range n {
			addr := fmt.Sprintf("10.%d.%d.%d:443", i>>16, (i>>8)&255, i&255)
			eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: addr}}})
			addrs = append(addrs, lbresolver.Address{Addr: addr})
		}
		keys := make([]string, 1024)
		for i := range keys {
			keys[i] = fmt.Sprint(i)
		}
		_, cc := grpcRingHash(b, eps, cfg, len(keys))
		last, _ := cc.lastState()
		ours := lbkitRingHash(b, addrs, cfg, len(keys), 64)
		b.Run(fmt.Sprintf("grpc-go/n=%d", n), func(b *testing.B) {
			st := last.Picker
			ctxs := make([]context.Context, len(keys))
			for i, k := range keys {
				ctxs[i] = metadata.AppendToOutgoingContext(context.Background(), "x-key", k)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := st.Pick(balancer.PickInfo{Ctx: ctxs[i%len(ctxs)]}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("lbkit/n=%d", n), func(b *testing.B) {
			p := ours
			infos := make([]lb.PickInfo, len(keys))
			for i, k := range keys {
				infos[i] = lb.PickInfo{Ctx: context.Background(), Metadata: http.Header{"X-Key": {k}}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := p.Pick(infos[i%len(infos)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRingHashUpdate: a first update of 10,000 weighted endpoints,
// which builds the ring (the default 4,096 entries) and the endpoint
// records: grpc-go's ring_hash on a fake ClientConn (its children are
// created lazily, at the first pick on each) beside lbkit's on the lbtest
// harness (which creates every SubConn, unconnected, at once).
func BenchmarkRingHashUpdate(b *testing.B) {
	const n = 10000
	var eps []resolver.Endpoint
	var addrs []lbresolver.Address
	for i := range n {
		addr := fmt.Sprintf("10.%d.%d.%d:443", i>>16, (i>>8)&255, i&255)
		w := uint32(1 + i%7)
		eps = append(eps, weight.Set(resolver.Endpoint{Addresses: []resolver.Address{{Addr: addr}}}, weight.EndpointInfo{Weight: w}))
		addrs = append(addrs, lbweight.Set(lbresolver.Address{Addr: addr}, w))
	}
	b.Run("grpc-go", func(b *testing.B) {
		bb := balancer.Get("ring_hash_experimental")
		cfg, err := bb.(balancer.ConfigParser).ParseConfig([]byte(`{}`))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for range b.N {
			bal := bb.Build(newFakeCC(), balancer.BuildOptions{})
			if err := bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: resolver.State{Endpoints: eps}, BalancerConfig: cfg}); err != nil {
				b.Fatal(err)
			}
			bal.Close()
		}
	})
	b.Run("lbkit", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			h := lbtest.New(b)
			_, cfg := h.BuildPolicy(consistenthash.RingHashName, `{}`)
			if err := h.UpdateAddresses(cfg, addrs...); err != nil {
				b.Fatal(err)
			}
			h.Close()
		}
	})
}
