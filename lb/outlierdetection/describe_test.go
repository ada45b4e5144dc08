package outlierdetection

import (
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weightedtarget"
)

// The tree weighted_target → outlier_detection → round_robin describes
// itself: the target's weight, and the ejected endpoint marked as such
// with the real SubConn, not the policy's wrapper.
func TestDescribeMarksEjectedEndpoints(t *testing.T) {
	t.Parallel()
	h := lbtest.New(t, lbtest.WithRegistry(testRegistry))
	_, cfg := h.BuildPolicy(weightedtarget.Name, `{"targets": {"t0": {"weight": 3, "childPolicy":
		[{"outlier_detection_experimental": {"interval": "10s",
		"failurePercentageEjection": {"threshold": 50, "minimumHosts": 1, "requestVolume": 10},
		"childPolicy": [{"round_robin": {}}]}}]}}}`)
	var list []resolver.Address
	for _, a := range []string{"a", "b"} {
		list = append(list, hierarchy.Set(resolver.Address{Addr: a}, []string{"t0"}))
	}
	if err := h.UpdateAddresses(cfg, list...); err != nil {
		t.Fatal(err)
	}
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	pickAndReport(t, h, 20, "b")
	h.Advance(10 * time.Second)

	var root lb.Node
	h.Do(func() { root = h.Balancer.(lb.Describer).Describe() })
	if root.Policy != weightedtarget.Name || len(root.Children) != 1 {
		t.Fatalf("root %+v, want weighted_target with one target", root)
	}
	t0 := root.Children[0]
	if t0.Name != "t0" || t0.Weight != 3 || t0.Policy != Name || len(t0.Children) != 1 {
		t.Fatalf("target %+v, want t0 weight 3 running %s", t0, Name)
	}
	leaf := t0.Children[0]
	if leaf.Policy != "round_robin" || len(leaf.Endpoints) != 2 {
		t.Fatalf("leaf %+v, want round_robin with 2 endpoints", leaf)
	}
	for _, e := range leaf.Endpoints {
		if _, ok := e.SubConn.(*lbtest.SubConn); !ok {
			t.Errorf("endpoint %s: SubConn %T, want the real *lbtest.SubConn", e.Address, e.SubConn)
		}
		if e.Ejected != (e.Address == "b") {
			t.Errorf("endpoint %s: ejected %v, want only b ejected", e.Address, e.Ejected)
		}
	}
}
