package roundrobin_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// rrMachine drives one round_robin balancer with random updates (with
// duplicates), SubConn state changes and picks, against a model of the
// policy's inputs: the READY list is the last update's endpoints, in order,
// whose SubConn last reported READY. Every picker must hand them out in
// rotation from some start, and a series of picks on one picker continues
// where the last one stopped.
type rrMachine struct {
	h       *lbtest.Harness
	pool    []resolver.Address
	list    []int                               // pool indices of the last update, de-duplicated
	reports map[lb.SubConn]lb.ConnectivityState // last state each SubConn reported
	picker  lb.Picker                           // the picker last picked from
	next    int                                 // its next index into the READY list
}

// subConnOf returns the live SubConn of pool endpoint i.
func (m *rrMachine) subConnOf(t *rapid.T, i int) *lbtest.SubConn {
	for _, sc := range m.h.CC.SubConns() {
		if !sc.IsShutdown() && sc.Addresses()[0] == m.pool[i] {
			return sc
		}
	}
	t.Fatalf("no live SubConn for %v", m.pool[i])
	return nil
}

func (m *rrMachine) ready(t *rapid.T) []lb.SubConn {
	var out []lb.SubConn
	for _, i := range m.list {
		if sc := m.subConnOf(t, i); m.reports[sc] == lb.Ready {
			out = append(out, sc)
		}
	}
	return out
}

func (m *rrMachine) update(t *rapid.T) {
	var addrs []resolver.Address
	m.list = m.list[:0]
	for range rapid.IntRange(1, 7).Draw(t, "len") {
		i := rapid.IntRange(0, len(m.pool)-1).Draw(t, "endpoint")
		addrs = append(addrs, m.pool[i])
		if !slices.Contains(m.list, i) {
			m.list = append(m.list, i)
		}
	}
	if err := m.h.UpdateAddresses(nil, addrs...); err != nil {
		t.Fatalf("update: %v", err)
	}
}

func (m *rrMachine) report(t *rapid.T) {
	sc := m.subConnOf(t, rapid.SampledFrom(m.list).Draw(t, "endpoint"))
	switch rapid.IntRange(0, 2).Draw(t, "state") {
	case 0:
		sc.Ready()
	case 1:
		sc.Idle()
	default:
		sc.Fail(errors.New("refused"))
	}
	m.reports[sc] = sc.State()
}

func (m *rrMachine) pick(t *rapid.T) {
	ready := m.ready(t)
	st := m.h.State()
	if (st.ConnectivityState == lb.Ready) != (len(ready) > 0) {
		t.Fatalf("state %v with %d READY SubConns", st.ConnectivityState, len(ready))
	}
	if len(ready) == 0 {
		t.Skip("not READY")
	}
	for range rapid.IntRange(1, 2*len(ready)+1).Draw(t, "picks") {
		r, err := st.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		if err != nil {
			t.Fatalf("READY pick: %v", err)
		}
		if st.Picker != m.picker { // a new picker: its start is free
			m.picker, m.next = st.Picker, slices.Index(ready, r.SubConn)
			if m.next < 0 {
				t.Fatalf("picked %v, not READY", r.SubConn)
			}
		}
		if want := ready[m.next]; r.SubConn != want {
			t.Fatalf("picked %v, want %v (READY list %v)", r.SubConn, want, ready)
		}
		m.next = (m.next + 1) % len(ready)
	}
}

// TestPropertyRotation runs rrMachine.
func TestPropertyRotation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &rrMachine{reports: map[lb.SubConn]lb.ConnectivityState{}}
		m.h = lbtest.New(t, lbtest.WithSeed(rapid.Uint64().Draw(t, "seed")))
		m.h.Build(roundrobin.Builder{})
		m.pool = addrs(5)
		m.update(t)
		t.Repeat(map[string]func(*rapid.T){
			"update": m.update,
			"report": m.report,
			"pick":   m.pick,
		})
	})
}
