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

// An ejected endpoint's node says when its ejection ends: the first sweep
// at or after its ejection time. Ejected at the +10s sweep for 25s (due at
// +35s), it returns at the +40s sweep, and the description says so.
func TestDescribeSaysWhenAnEjectionEnds(t *testing.T) {
	t.Parallel()
	h := lbtest.New(t, lbtest.WithRegistry(testRegistry))
	_, cfg := h.BuildPolicy(Name, `{"interval": "10s", "baseEjectionTime": "25s",
		"failurePercentageEjection": {"threshold": 50, "minimumHosts": 1, "requestVolume": 10},
		"childPolicy": [{"round_robin": {}}]}`)
	if err := h.UpdateAddresses(cfg, resolver.Address{Addr: "a"}, resolver.Address{Addr: "b"}); err != nil {
		t.Fatal(err)
	}
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	pickAndReport(t, h, 20, "b")
	h.Advance(10 * time.Second)

	ends := func() map[string]*time.Time {
		var root lb.Node
		h.Do(func() { root = h.Balancer.(lb.Describer).Describe() })
		out := map[string]*time.Time{}
		for _, e := range root.Children[0].Endpoints {
			out[e.Address] = e.EjectedUntil
			if e.Address == "b" && e.EjectedUntil != nil && (e.StateSince == nil || !e.StateSince.Equal(time.Unix(10, 0))) {
				t.Errorf("ejected b's StateSince = %v, want the ejection at +10s", e.StateSince)
			}
		}
		return out
	}
	want := time.Unix(40, 0)
	if got := ends(); got["a"] != nil || got["b"] == nil || !got["b"].Equal(want) {
		t.Fatalf("EjectedUntil a=%v b=%v, want a none and b at +40s", got["a"], got["b"])
	}
	h.Advance(30*time.Second - 1)
	if got := ends(); got["b"] == nil || !got["b"].Equal(want) {
		t.Fatalf("just before +40s, b's EjectedUntil = %v, want +40s still", got["b"])
	}
	h.Advance(1)
	if got := ends(); got["b"] != nil {
		t.Fatalf("at +40s b is back, but EjectedUntil = %v", got["b"])
	}
}
