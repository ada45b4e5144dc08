package slowstart_test

import (
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/peakewma"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// TestPoliciesCountEndpointsInSlowStart: round_robin, least_request and
// peak_ewma record lbkit.lb.endpoints_in_slow_start as weighted_round_robin
// records A100's grpc.lb.wrr.endpoints_in_slow_start
// (TestMetricEndpointsInSlowStart in lb/wrr), each labelled with its name:
// each picker built adds its READY endpoints in their window. A warm
// endpoint never counts; a new one counts in the picker of its READY and in
// each of the 99 re-weighting ticks of its 10 s window, not in the tick at
// the window's end (exact on the mock clock); it counts again when it comes
// back READY. Without slow start nothing is recorded.
func TestPoliciesCountEndpointsInSlowStart(t *testing.T) {
	for _, name := range []string{roundrobin.Name, leastrequest.Name, peakewma.Name} {
		t.Run(name, func(t *testing.T) {
			h := lbtest.New(t)
			_, plain := h.BuildPolicy(name, `{}`)
			cfg, _, err := lb.ParseConfig(lb.DefaultRegistry().Get(name), []byte(`{"slowStartConfig": {"slowStartWindow": "10s"}}`))
			if err != nil {
				t.Fatal(err)
			}
			m, target := h.Metrics, h.CC.Target()
			want := func(n int64) {
				t.Helper()
				m.Want(t, n, slowstart.MetricEndpointsInSlowStart.Name, target, "", name)
			}
			a, b := resolver.Address{Addr: "a"}, resolver.Address{Addr: "b"}
			if err := h.UpdateAddresses(plain, a, b); err != nil {
				t.Fatal(err)
			}
			h.SubConn(0).Ready()
			h.SubConn(1).Ready()
			h.SubConn(1).Idle()
			h.SubConn(1).Connecting()
			h.SubConn(1).Ready() // no slow start: nothing counts
			want(0)
			if err := h.UpdateAddresses(cfg, a, b, resolver.Address{Addr: "c"}); err != nil {
				t.Fatal(err)
			}
			want(0)
			c := h.SubConnFor("c")
			c.Ready()
			want(1)
			h.Advance(10*time.Second - time.Nanosecond)
			want(100)
			h.Advance(time.Nanosecond) // the last tick: c's window has passed
			want(100)
			c.Idle()
			c.Connecting()
			c.Ready() // back: its ramp restarts
			want(101)
		})
	}
}
