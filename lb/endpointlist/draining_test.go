package endpointlist_test

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

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

// drainMachine drives round_robin, built on endpointlist, with random
// updates that mark random endpoints draining and random SubConn reports,
// against a model written from the rule's text: the picker serves the
// READY endpoints that are not draining, or every READY endpoint when all
// of them are draining; a SubConn lives as long as its endpoint stays
// listed, marked or not.
type drainMachine struct {
	h        *lbtest.Harness
	listed   []string
	draining map[string]bool
	reports  map[*lbtest.SubConn]lb.ConnectivityState
	made     map[string]*lbtest.SubConn // each listed endpoint's SubConn
}

var drainPool = []string{"a", "b", "c", "d", "e"}

// live returns the SubConn of the listed endpoint addr.
func (m *drainMachine) live(t *rapid.T, addr string) *lbtest.SubConn {
	for _, sc := range m.h.CC.SubConns() {
		if !sc.IsShutdown() && sc.Addresses()[0].Addr == addr {
			return sc
		}
	}
	t.Fatalf("no live SubConn for %s", addr)
	return nil
}

func (m *drainMachine) update(t *rapid.T) {
	listed := rapid.SliceOfNDistinct(rapid.SampledFrom(drainPool), 1, len(drainPool), rapid.ID[string]).Draw(t, "listed")
	var as []resolver.Address
	drain := map[string]bool{}
	for _, a := range listed {
		addr := resolver.Address{Addr: a}
		if rapid.Bool().Draw(t, "draining "+a) {
			addr, drain[a] = draining.Set(addr), true
		}
		as = append(as, addr)
	}
	if err := m.h.UpdateAddresses(nil, as...); err != nil {
		t.Fatalf("update: %v", err)
	}
	made := map[string]*lbtest.SubConn{}
	for _, a := range listed {
		sc := m.live(t, a)
		if old, ok := m.made[a]; ok && old != sc {
			t.Fatalf("%s got a new SubConn though it stayed listed (draining %v, was %v)", a, drain[a], m.draining[a])
		}
		made[a] = sc
	}
	m.listed, m.draining, m.made = listed, drain, made
}

func (m *drainMachine) report(t *rapid.T) {
	a := rapid.SampledFrom(m.listed).Draw(t, "endpoint")
	sc := m.made[a]
	sc.UpdateState(rapid.SampledFrom([]lb.SubConnState{
		{ConnectivityState: lb.Ready},
		{ConnectivityState: lb.Idle},
		{ConnectivityState: lb.TransientFailure, ConnectionError: errors.New("refused")},
	}).Draw(t, "state"))
	m.reports[sc] = sc.State()
}

func (m *drainMachine) check(t *rapid.T) {
	m.h.Settle()
	var ready, serving []string
	for _, a := range m.listed {
		if m.reports[m.made[a]] == lb.Ready {
			ready = append(ready, a)
			if !m.draining[a] {
				serving = append(serving, a)
			}
		}
	}
	if len(serving) == 0 {
		serving = ready
	}
	st := m.h.State()
	if (st.ConnectivityState == lb.Ready) != (len(ready) > 0) {
		t.Fatalf("state %v with READY endpoints %v", st.ConnectivityState, ready)
	}
	if len(ready) == 0 {
		return
	}
	counts, err := lbtest.CountPicks(st.Picker, 2*len(serving))
	if err != nil {
		t.Fatal(err)
	}
	var picked []string
	for sc := range counts {
		picked = append(picked, sc.(*lbtest.SubConn).Addresses()[0].Addr)
	}
	slices.Sort(picked)
	want := slices.Sorted(slices.Values(serving))
	if !slices.Equal(picked, want) {
		t.Fatalf("picks went to %v, want %v (listed %v, draining %v, READY %v)", picked, want, m.listed, m.draining, ready)
	}
}

// TestPropertyDrainingRule runs drainMachine.
func TestPropertyDrainingRule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := lbtest.New(t)
		h.BuildPolicy("round_robin", `{}`)
		m := &drainMachine{h: h, reports: map[*lbtest.SubConn]lb.ConnectivityState{}}
		m.update(t)
		t.Repeat(map[string]func(*rapid.T){
			"update": m.update,
			"report": m.report,
			"":       m.check,
		})
	})
}
