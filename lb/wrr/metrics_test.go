package wrr_test

import (
	"testing"

	"github.com/lbkit/lbkit/lb"
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
