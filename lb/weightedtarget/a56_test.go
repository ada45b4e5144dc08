package weightedtarget

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
)

// a56Config is gRFC A56's "Hierarchical Addresses" tree: priority_experimental
// over two weighted_target_experimental children, each over two test_leaf
// localities, with the weights given.
func a56Config(wA, wB, wC, wD int) string {
	wt := func(l1 string, w1 int, l2 string, w2 int) string {
		return fmt.Sprintf(`[{"weighted_target_experimental": {"targets": {
			%q: {"weight": %d, "childPolicy": [{"test_leaf": {}}]},
			%q: {"weight": %d, "childPolicy": [{"test_leaf": {}}]}}}}]`, l1, w1, l2, w2)
	}
	return fmt.Sprintf(`{"children": {"child0": {"config": %s}, "child1": {"config": %s}}, "priorities": ["child0", "child1"]}`,
		wt("localityA", wA, "localityB", wB), wt("localityC", wC, "localityD", wD))
}

// a56Addresses are A56's example addresses with their paths.
func a56Addresses() []resolver.Address {
	return []resolver.Address{
		lbtest.PathAddr("10.0.0.1:80", "child0", "localityA"),
		lbtest.PathAddr("10.0.0.2:80", "child0", "localityB"),
		lbtest.PathAddr("10.0.0.3:80", "child1", "localityC"),
		lbtest.PathAddr("10.0.0.4:80", "child1", "localityD"),
	}
}

// subConnByAddr maps each SubConn created so far to its address, checking
// that each got exactly one plain address (its path fully stripped).
func subConnByAddr(t *testing.T, h *lbtest.Harness) map[lb.SubConn]string {
	t.Helper()
	out := make(map[lb.SubConn]string)
	for _, sc := range h.CC.SubConns() {
		addrs := sc.Addresses()
		if len(addrs) != 1 {
			t.Fatalf("%v has %d addresses, want 1", sc, len(addrs))
		}
		if p, ok := hierarchy.Get(addrs[0]); ok {
			t.Fatalf("%v reached its leaf with path %v left, want none", sc, p)
		}
		if addrs[0] != (resolver.Address{Addr: addrs[0].Addr}) {
			t.Fatalf("%v reached its leaf with attributes %v, want a plain address", sc, addrs[0].Attributes)
		}
		out[sc] = addrs[0].Addr
	}
	return out
}

func TestA56HierarchyEndToEnd(t *testing.T) {
	t.Parallel()
	reg := lbtest.NewRegistry()
	reg.Register(Builder{})
	reg.Register(priority.NewBuilder())
	h := lbtest.New(t, lbtest.WithRegistry(reg))
	_, cfg := h.BuildPolicy(priority.Name, a56Config(1, 3, 2, 1))
	if err := h.UpdateAddresses(cfg, a56Addresses()...); err != nil {
		t.Fatalf("UpdateClientConnState: %v", err)
	}

	// priority creates child0 only; its weighted_target splits the two
	// addresses between localityA and localityB, paths stripped.
	byAddr := subConnByAddr(t, h)
	if got := slices.Sorted(maps.Values(byAddr)); !slices.Equal(got, []string{"10.0.0.1:80", "10.0.0.2:80"}) {
		t.Fatalf("SubConns for %v, want child0's 10.0.0.1 and 10.0.0.2", got)
	}
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	s, _ := h.CC.LastState()
	if s.ConnectivityState != lb.Ready {
		t.Fatalf("published %v, want READY", s.ConnectivityState)
	}
	seq := pickSeq(t, s.Picker, byAddr, 400)
	checkPeriods(t, seq, 4, map[string]int{"10.0.0.1:80": 1, "10.0.0.2:80": 3})

	// child0's connections fail: child0's weighted_target reports
	// TRANSIENT_FAILURE, priority creates child1.
	for _, sc := range h.CC.SubConns() {
		sc.Fail(errConn)
	}
	byAddr = subConnByAddr(t, h)
	if len(byAddr) != 4 {
		t.Fatalf("%d SubConns, want child1's two created after failover", len(byAddr))
	}
	if s, _ := h.CC.LastState(); s.ConnectivityState != lb.Connecting {
		t.Fatalf("after failover published %v, want child1's CONNECTING", s.ConnectivityState)
	}
	for _, sc := range h.CC.SubConns()[2:] {
		sc.Ready()
	}
	s, _ = h.CC.LastState()
	if s.ConnectivityState != lb.Ready {
		t.Fatalf("published %v, want READY", s.ConnectivityState)
	}
	seq = pickSeq(t, s.Picker, byAddr, 300)
	checkPeriods(t, seq, 3, map[string]int{"10.0.0.3:80": 2, "10.0.0.4:80": 1})

	// localityA comes back: priority returns to child0, whose only READY
	// locality takes every pick.
	h.CC.SubConns()[0].Ready()
	s, _ = h.CC.LastState()
	seq = pickSeq(t, s.Picker, byAddr, 10)
	checkPeriods(t, seq, 1, map[string]int{"10.0.0.1:80": 1})
}
