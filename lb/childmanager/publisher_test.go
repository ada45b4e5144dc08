package childmanager_test

import (
	"fmt"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
	"github.com/lbkit/lbkit/lb/lbtest"
)

func TestPublisher(t *testing.T) {
	h := lbtest.New(t)
	builds := 0
	refreshes := 0
	p := childmanager.NewPublisher(h.CC, func(a, b int) bool { return a == b }, func(s lb.State) lb.State {
		refreshes++
		return s
	})
	state := func(s lb.ConnectivityState) func() lb.State {
		return func() lb.State { builds++; return lb.State{ConnectivityState: s, Picker: lb.NewQueuePicker()} }
	}
	sent := func() int { return len(h.CC.States.All()) }
	h.Do(func() { p.Publish(1, false, state(lb.Connecting)) })
	h.Do(func() { p.Publish(1, false, state(lb.Ready)) }) // same key: nothing
	if sent() != 1 || builds != 1 {
		t.Fatalf("same key: %d sent, %d built; want 1, 1", sent(), builds)
	}
	h.Do(func() { p.Publish(1, true, state(lb.Ready)) }) // forced: the last state again
	if last, _ := h.CC.LastState(); sent() != 2 || builds != 1 || refreshes != 1 || last.ConnectivityState != lb.Connecting {
		t.Fatalf("forced, same key: %d sent (last %v), %d built, %d refreshed; want 2 (CONNECTING), 1, 1", sent(), last.ConnectivityState, builds, refreshes)
	}
	h.Do(func() { p.Publish(2, false, state(lb.Ready)) })
	if last, _ := h.CC.LastState(); sent() != 3 || builds != 2 || last.ConnectivityState != lb.Ready {
		t.Fatalf("new key: %d sent (last %v), %d built; want 3 (READY), 2", sent(), last.ConnectivityState, builds)
	}
}

// uncomparablePicker cannot be compared with ==: it holds a slice.
type uncomparablePicker struct{ ids []int }

func (p uncomparablePicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	return lb.PickResult{}, fmt.Errorf("%w (%d ids)", lb.ErrNoSubConnAvailable, len(p.ids))
}

func TestSameState(t *testing.T) {
	q := lb.NewQueuePicker()
	ptr := &uncomparablePicker{}
	for _, tc := range []struct {
		name string
		a, b lb.State
		want bool
	}{
		{"same state and picker", lb.State{ConnectivityState: lb.Ready, Picker: ptr}, lb.State{ConnectivityState: lb.Ready, Picker: ptr}, true},
		{"other state", lb.State{ConnectivityState: lb.Ready, Picker: q}, lb.State{ConnectivityState: lb.Idle, Picker: q}, false},
		{"other picker", lb.State{ConnectivityState: lb.Ready, Picker: ptr}, lb.State{ConnectivityState: lb.Ready, Picker: &uncomparablePicker{}}, false},
		{"equal comparable values", lb.State{ConnectivityState: lb.Connecting, Picker: q}, lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()}, true},
		{"uncomparable values never panic", lb.State{Picker: uncomparablePicker{}}, lb.State{Picker: uncomparablePicker{}}, false},
		{"nil pickers", lb.State{}, lb.State{}, true},
	} {
		if got := childmanager.SameState(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameState = %v, want %v", tc.name, got, tc.want)
		}
	}
}
