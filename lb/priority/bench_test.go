package priority

import (
	"fmt"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// BenchmarkUpdateClientConnState measures a steady-state parent update: 3
// priorities of 10 localities each, every child a test_leaf that already
// has a SubConn per address (all three children exist, after two
// failovers). The update groups the addresses by path, strips the first
// element, and each leaf diffs its addresses. ns/addr should stay flat as
// the size grows tenfold.
func BenchmarkUpdateClientConnState(b *testing.B) {
	for _, endpoints := range []int{100, 1000} {
		const priorities, localities = 3, 10
		n := priorities * localities * endpoints
		b.Run(fmt.Sprintf("addrs=%d", n), func(b *testing.B) {
			h := lbtest.New(b)
			h.Build(NewBuilder())
			cfg := mustParse(b, configJSON(leafChild("p0"), leafChild("p1"), leafChild("p2")))
			addrs := make([]resolver.Address, 0, n)
			for p := range priorities {
				for l := range localities {
					for e := range endpoints {
						addrs = append(addrs, lbtest.PathAddr(fmt.Sprintf("10.%d.%d.%d:%d", p, l, e%250, 8000+e/250),
							fmt.Sprintf("p%d", p), fmt.Sprintf("locality%d", l)))
					}
				}
			}
			state := lb.ClientConnState{ResolverState: resolver.State{Addresses: addrs}, BalancerConfig: cfg}
			if err := h.UpdateClientConnState(state); err != nil {
				b.Fatal(err)
			}
			h.Advance(2 * DefaultFailoverTimeout) // p0 and p1 time out: p2 is created
			if got := len(h.CC.SubConns()); got != n {
				b.Fatalf("%d SubConns, want %d: not every child exists", got, n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := h.UpdateClientConnState(state); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/addr")
		})
	}
}
