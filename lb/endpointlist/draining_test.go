package endpointlist_test

import (
	"errors"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// TestDrainingEndpointGetsNoNewPicksWhileAnotherServes: every policy built
// on endpointlist leaves a draining endpoint out of its picks while another
// READY endpoint is not draining, picks it when it alone is READY, and
// takes it back when the mark goes; the mark never replaces the
// endpoint's SubConn, so its requests in flight finish on it.
func TestDrainingEndpointGetsNoNewPicksWhileAnotherServes(t *testing.T) {
	for _, policy := range []string{"round_robin", "least_request_experimental", "weighted_round_robin"} {
		t.Run(policy, func(t *testing.T) {
			h := lbtest.New(t)
			b, cfg := h.BuildPolicy(policy, `{}`)
			a, bb, c := resolver.Address{Addr: "a"}, resolver.Address{Addr: "b"}, resolver.Address{Addr: "c"}
			if err := h.UpdateAddresses(cfg, a, draining.Set(bb), c); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				h.SubConn(i).Ready()
			}
			h.Settle()
			picks := func() map[string]int {
				t.Helper()
				counts, err := lbtest.CountPicks(h.State().Picker, 60)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]int{}
				for sc, n := range counts {
					out[sc.(*lbtest.SubConn).Addresses()[0].Addr] += n
				}
				return out
			}
			if got := picks(); got["b"] != 0 || got["a"] == 0 || got["c"] == 0 {
				t.Errorf("picks %v with b draining, want none on b and some on a and c", got)
			}
			var d lb.Node
			h.Do(func() { d = b.(lb.Describer).Describe() })
			if e := d.Endpoints[1]; e.Address != "b" || !e.Draining || d.Endpoints[0].Draining {
				t.Errorf("Describe() endpoints %+v, want b alone marked draining", d.Endpoints)
			}

			// a and c fail: the draining endpoint is the only one that can
			// serve, and serves.
			h.SubConn(0).Fail(errors.New("down"))
			h.SubConn(2).Fail(errors.New("down"))
			h.Settle()
			if got := picks(); got["b"] != 60 {
				t.Errorf("picks %v with only the draining b READY, want all on b", got)
			}

			// The mark goes: b is picked beside a and c again, on the same
			// SubConn.
			h.SubConn(0).Ready()
			h.SubConn(2).Ready()
			if err := h.UpdateAddresses(cfg, a, bb, c); err != nil {
				t.Fatal(err)
			}
			h.Settle()
			if got := picks(); got["b"] == 0 || got["a"] == 0 || got["c"] == 0 {
				t.Errorf("picks %v after the mark went, want some on each", got)
			}
			if n := len(h.CC.SubConns()); n != 3 {
				t.Errorf("%d SubConns, want the 3 first made: marking must not replace a SubConn", n)
			}
		})
	}
}
