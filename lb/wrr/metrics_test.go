package wrr_test

import (
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/slowstart"
	"github.com/lbkit/lbkit/lb/wrr"
)

// Each READY picker built counts its endpoints without a weight, and counts
// one fallback when every weight is equal (plain round robin).
func TestMetricsFallbackAndUnweightedEndpoints(t *testing.T) {
	e := newEnv(t, nil)
	m, target := e.h.Metrics, e.h.CC.Target()
	scs := e.readyAll(ep("a", 3), ep("b", noWeight))
	// Pickers over [a] (one weight: round robin) and [a b].
	m.Want(t, 1, wrr.MetricRRFallback.Name, target, "")
	m.Want(t, 1, wrr.MetricEndpointWeightNotYetUsable.Name, target, "")

	scs[0].Idle() // picker over [b]: unweighted, round robin
	m.Want(t, 2, wrr.MetricRRFallback.Name, target, "")
	m.Want(t, 2, wrr.MetricEndpointWeightNotYetUsable.Name, target, "")
}

// Describe lists every endpoint, in update order, with its state and weight.
func TestDescribeListsEndpointsWithWeights(t *testing.T) {
	e := newEnv(t, nil)
	scs := e.readyAll(ep("a", 3), ep("b", noWeight))
	scs[1].Idle()
	var n lb.Node
	e.h.Do(func() { n = e.h.Balancer.(lb.Describer).Describe() })
	if n.Policy != "weighted_round_robin" || len(n.Endpoints) != 2 {
		t.Fatalf("describe = %+v, want weighted_round_robin with 2 endpoints", n)
	}
	a, b := n.Endpoints[0], n.Endpoints[1]
	if a.Address != "a" || a.State != lb.Ready || a.Weight != 3 || a.SubConn != scs[0] {
		t.Errorf("endpoint a = %+v, want READY weight 3 on %v", a, scs[0])
	}
	if b.Address != "b" || b.Weight != 1 || b.State == lb.Ready {
		t.Errorf("endpoint b = %+v, want not READY, weight 1", b)
	}
}

// gRFC A100's endpoints_in_slow_start: each picker built (a scheduler, in
// A100's words) adds its READY endpoints in their slow start window. A warm
// endpoint never counts; a new one counts in the picker of its READY and in
// each of the 99 re-weighting ticks of its 10 s window, not in the tick at
// the window's end (exact on the mock clock); it counts again when it comes
// back READY.
func TestMetricEndpointsInSlowStart(t *testing.T) {
	h := lbtest.New(t)
	h.Build(wrr.Builder{})
	m, target := h.Metrics, h.CC.Target()
	if err := h.UpdateAddresses(wrr.Config{}, ep("a", 1)); err != nil {
		t.Fatal(err)
	}
	h.SubConn(0).Ready() // warm: READY before slow start
	cfg := wrr.Config{SlowStart: &slowstart.Config{SlowStartWindow: 10 * time.Second, Aggression: 1, MinWeightPercent: 10}}
	if err := h.UpdateAddresses(cfg, ep("a", 1), ep("b", 1)); err != nil {
		t.Fatal(err)
	}
	m.Want(t, 0, wrr.MetricEndpointsInSlowStart.Name, target, "")
	b := h.SubConnFor("b")
	b.Ready()
	m.Want(t, 1, wrr.MetricEndpointsInSlowStart.Name, target, "")
	h.Advance(10*time.Second - time.Nanosecond)
	m.Want(t, 100, wrr.MetricEndpointsInSlowStart.Name, target, "")
	h.Advance(time.Nanosecond) // the last tick: b's window has passed
	m.Want(t, 100, wrr.MetricEndpointsInSlowStart.Name, target, "")
	b.Idle()
	b.Connecting()
	b.Ready() // back: its ramp restarts
	m.Want(t, 101, wrr.MetricEndpointsInSlowStart.Name, target, "")
}
