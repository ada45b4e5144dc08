package wrr_test

import (
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// Each READY picker built counts its endpoints without a weight, and counts
// one fallback when every weight is equal (plain round robin).
func TestMetricsFallbackAndUnweightedEndpoints(t *testing.T) {
	e := newEnv(t, nil)
	m, target := e.h.Metrics, e.h.CC.Target()
	scs := e.readyAll(ep("a", 3), ep("b", noWeight))
	// Pickers over [a] (one weight: round robin) and [a b].
	m.Want(t, 1, lb.MetricWRRFallback.Name, target, "")
	m.Want(t, 1, lb.MetricWRRNotYetUsable.Name, target, "")

	scs[0].Idle() // picker over [b]: unweighted, round robin
	m.Want(t, 2, lb.MetricWRRFallback.Name, target, "")
	m.Want(t, 2, lb.MetricWRRNotYetUsable.Name, target, "")
}
