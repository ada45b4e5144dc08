package roundrobin_test

import (
	"context"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// rrMachine drives one round_robin balancer with random updates (with
// duplicates), SubConn state changes and picks, against a model of the
// policy's inputs: the READY list is the last update's endpoints, in order,
// whose SubConn last reported READY. Every picker must hand them out in
// rotation from some start, and a series of picks on one picker continues
// where the last one stopped.
type rrMachine struct {
	h      *lbtest.Harness
	model  *lbtest.EndpointModel
	picker lb.Picker // the picker last picked from
	next   int       // its next index into the READY list
}

func (m *rrMachine) update(t *rapid.T) { m.model.DrawUpdate(t, nil) }

func (m *rrMachine) report(t *rapid.T) { m.model.DrawReport(t) }

func (m *rrMachine) pick(t *rapid.T) {
	ready := m.model.Ready()
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
		m := &rrMachine{h: lbtest.New(t, lbtest.WithSeed(rapid.Uint64().Draw(t, "seed")))}
		m.h.Build(roundrobin.Builder{})
		m.model = lbtest.NewEndpointModel(m.h, lbtest.Addrs(5)...)
		m.update(t)
		t.Repeat(map[string]func(*rapid.T){
			"update": m.update,
			"report": m.report,
			"pick":   m.pick,
		})
	})
}
