package lb_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// TestScopeCloseDropsPendingWork closes a scope from inside a callback
// while hops and fired timers of it and of its descendants wait in the
// queue behind that callback, and pending timers wait on the clock: none
// of them runs afterwards, and no timer is left in the serializer.
func TestScopeCloseDropsPendingWork(t *testing.T) {
	m := clock.NewMock()
	ser := lb.NewSerializer(m)
	defer ser.Close()
	root := lb.NewScope(ser)
	parent := lb.NewScope(root)
	child := lb.NewScope(parent)
	grandchild := lb.NewScope(child)
	sibling := lb.NewScope(root) // not closed: its work must run

	var ran []string
	release := make(chan struct{})
	ser.Schedule(func() { <-release; parent.Close() })
	for name, s := range map[string]*lb.Scope{"parent": parent, "child": child, "grandchild": grandchild, "sibling": sibling} {
		s.Schedule(func() { ran = append(ran, name+" hop") })
		s.AfterFunc(0, func() { ran = append(ran, name+" fired timer") })
		s.AfterFunc(time.Second, func() { ran = append(ran, name+" pending timer") })
	}
	close(release)
	advance(t, m, ser, time.Hour)
	slices.Sort(ran)
	if want := []string{"sibling fired timer", "sibling hop", "sibling pending timer"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %q, want only the sibling's %q", ran, want)
	}
	if d, ok := ser.NextDeadline(); ok {
		t.Errorf("a timer is still pending at %v after Close", d)
	}
	for name, s := range map[string]*lb.Scope{"parent": parent, "child": child, "grandchild": grandchild} {
		if !s.Closed() {
			t.Errorf("%s: Closed() = false", name)
		}
		if s.Schedule(func() { t.Errorf("%s: hop ran after Close", name) }) {
			t.Errorf("%s: Schedule after Close = true", name)
		}
		if tm := s.AfterFunc(0, func() { t.Errorf("%s: timer ran after Close", name) }); tm.Stop() {
			t.Errorf("%s: a timer made after Close could be stopped", name)
		}
	}
	if root.Closed() || sibling.Closed() {
		t.Errorf("closing a scope closed its parent or a sibling")
	}
	if lb.SerializerOf(grandchild) != ser || lb.SerializerOf(ser) != ser || lb.SerializerOf(nil) != nil {
		t.Errorf("SerializerOf does not find the serializer at the root")
	}
	advance(t, m, ser, time.Hour)
}

// TestScopeTimerStop: Stop is final and reports whether it stopped the
// timer, as the serializer's own timers do.
func TestScopeTimerStop(t *testing.T) {
	m := clock.NewMock()
	ser := lb.NewSerializer(m)
	defer ser.Close()
	s := lb.NewScope(lb.NewScope(ser))
	ran := 0
	tm := s.AfterFunc(time.Second, func() { ran++ })
	if err := ser.Run(guard(t), func() {
		if !tm.Stop() || tm.Stop() {
			t.Errorf("Stop, Stop = not true, false")
		}
	}); err != nil {
		t.Fatal(err)
	}
	fired := s.AfterFunc(time.Second, func() { ran++ })
	advance(t, m, ser, time.Second)
	if ran != 1 || fired.Stop() {
		t.Errorf("ran %d callbacks, Stop after firing = true; want 1, false", ran)
	}
}

// TestScopeClientConn: the scope's ClientConn passes calls while the
// scope is open and drops every call, and every SubConn state, once it or
// an ancestor is closed.
func TestScopeClientConn(t *testing.T) {
	h := lbtest.New(t)
	parent := lb.NewScope(h.Serializer)
	s := lb.NewScope(parent)
	cc := s.ClientConn(h.CC)
	var states []lb.ConnectivityState
	var sc lb.SubConn
	h.Do(func() {
		var err error
		sc, err = cc.NewSubConn([]resolver.Address{{Addr: "a:1"}}, lb.NewSubConnOptions{
			StateListener: func(st lb.SubConnState) { states = append(states, st.ConnectivityState) },
		})
		if err != nil {
			t.Fatalf("NewSubConn: %v", err)
		}
		sc.Connect()
		cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
		cc.ResolveNow()
	})
	h.SubConn(0).Ready()
	h.WantEvents("NewSubConn(SubConn(0: [a:1]))", "Connect(SubConn(0: [a:1]))", "UpdateState(CONNECTING)", "ResolveNow")
	if cc.Target() != h.CC.Target() {
		t.Errorf("Target() = %q, want %q", cc.Target(), h.CC.Target())
	}
	h.Do(func() {
		parent.Close()
		sc.Shutdown() // SHUTDOWN is queued for the listener, and dropped
		cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: lb.NewQueuePicker()})
		cc.ResolveNow()
		if _, err := cc.NewSubConn([]resolver.Address{{Addr: "b:1"}}, lb.NewSubConnOptions{StateListener: func(lb.SubConnState) {}}); err == nil {
			t.Errorf("NewSubConn after Close succeeded")
		}
	})
	h.WantEvents("Shutdown(SubConn(0: [a:1]))")
	if !slices.Equal(states, []lb.ConnectivityState{lb.Ready}) {
		t.Errorf("listener heard %v, want [READY] and nothing after Close", states)
	}
}

// scopeModel is the model of TestPropertyScope: which scopes are closed
// (a scope is closed when it or an ancestor is), and the timers.
type scopeModel struct {
	parent []int // parent[i] is scope i's parent, -1 for the root scope
	closed []bool
	timers []modelTimer
}

type modelTimer struct {
	scope    int
	deadline time.Time
	done     bool // ran, stopped, or ended by its scope's Close
}

func (m *scopeModel) open(i int) bool {
	for ; i >= 0; i = m.parent[i] {
		if m.closed[i] {
			return false
		}
	}
	return true
}

// endClosed marks the timers of closed scopes done: Close stopped them.
func (m *scopeModel) endClosed() {
	for i := range m.timers {
		if !m.open(m.timers[i].scope) {
			m.timers[i].done = true
		}
	}
}

func (m *scopeModel) nextDeadline() (time.Time, bool) {
	var next time.Time
	found := false
	for _, tm := range m.timers {
		if !tm.done && (!found || tm.deadline.Before(next)) {
			next, found = tm.deadline, true
		}
	}
	return next, found
}

// Property: for random trees of scopes and random sequences of Schedule,
// AfterFunc, Stop and Close (in batches run inside the serializer, so that
// work queued in a batch is still pending when a Close of the same batch
// runs), a hop runs iff its scope is open when the batch ends, a timer runs
// iff it was neither stopped nor its scope closed before its deadline,
// Stop reports exactly whether it stopped a pending timer, and the
// serializer's next deadline is the model's.
func TestPropertyScope(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		mock := clock.NewMock()
		ser := lb.NewSerializer(mock)
		defer ser.Close()
		m := &scopeModel{}
		var scopes []*lb.Scope
		var timers []lb.Timer
		newScope := func(parent int) {
			var p lb.Scheduler = ser
			if parent >= 0 {
				p = scopes[parent]
			}
			scopes = append(scopes, lb.NewScope(p))
			m.parent = append(m.parent, parent)
			m.closed = append(m.closed, false)
		}
		newScope(-1)
		ran := map[string]bool{}
		var wantHops []string
		steps := rapid.IntRange(1, 12).Draw(rt, "batches")
		for step := range steps {
			var queued []string // hops queued in this batch, with their scopes
			var queuedScope []int
			ops := rapid.IntRange(1, 8).Draw(rt, fmt.Sprintf("ops%d", step))
			var opsFn []func()
			for op := range ops {
				scope := rapid.IntRange(0, len(scopes)-1).Draw(rt, "scope")
				name := fmt.Sprintf("b%d.%d", step, op)
				switch kind := rapid.SampledFrom([]string{"close", "newScope", "schedule", "afterFunc", "stop"}).Draw(rt, "op"); kind {
				case "newScope":
					newScope(scope) // made outside the batch; it only runs work
				case "schedule":
					queued, queuedScope = append(queued, name), append(queuedScope, scope)
					want := m.open(scope)
					opsFn = append(opsFn, func() {
						if got := scopes[scope].Schedule(func() { ran[name] = true }); got != want {
							rt.Errorf("%s: Schedule on scope %d = %v, want %v", name, scope, got, want)
						}
					})
				case "afterFunc":
					d := time.Duration(rapid.IntRange(0, 4).Draw(rt, "d")) * time.Millisecond
					id := len(timers)
					timers = append(timers, nil)
					m.timers = append(m.timers, modelTimer{scope: scope, deadline: mock.Now().Add(d), done: !m.open(scope)})
					opsFn = append(opsFn, func() {
						timers[id] = scopes[scope].AfterFunc(d, func() { ran[fmt.Sprintf("timer%d", id)] = true })
					})
				case "stop":
					if len(timers) == 0 {
						continue
					}
					id := rapid.IntRange(0, len(timers)-1).Draw(rt, "timer")
					want := !m.timers[id].done
					m.timers[id].done = true
					opsFn = append(opsFn, func() {
						if got := timers[id].Stop(); got != want {
							rt.Errorf("Stop of timer %d = %v, want %v", id, got, want)
						}
					})
				case "close":
					m.closed[scope] = true
					m.endClosed()
					opsFn = append(opsFn, scopes[scope].Close)
				}
			}
			if err := ser.Run(guard(rt), func() {
				for _, f := range opsFn {
					f()
				}
			}); err != nil {
				rt.Fatalf("Run: %v", err)
			}
			for i, name := range queued {
				if m.open(queuedScope[i]) {
					wantHops = append(wantHops, name)
				}
			}
			// Run every timer due now (d = 0), then advance.
			var wantTimers []string
			d := time.Duration(rapid.IntRange(0, 3).Draw(rt, "advance")) * time.Millisecond
			for id := range m.timers {
				if tm := &m.timers[id]; !tm.done && !tm.deadline.After(mock.Now().Add(d)) {
					tm.done = true
					wantTimers = append(wantTimers, fmt.Sprintf("timer%d", id))
				}
			}
			mock.Add(d)
			if err := ser.WaitIdle(guard(rt), mock.Now()); err != nil {
				rt.Fatalf("WaitIdle: %v", err)
			}
			var got, want []string
			for name := range ran {
				got = append(got, name)
			}
			want = append(append(want, wantHops...), wantTimers...)
			for name := range ran {
				if !slices.Contains(want, name) {
					rt.Fatalf("%s ran; want only %v", name, want)
				}
			}
			for _, name := range want {
				if !ran[name] {
					rt.Fatalf("%s did not run; ran %v", name, got)
				}
			}
			clear(ran)
			wantHops = nil
			next, ok := ser.NextDeadline()
			wnext, wok := m.nextDeadline()
			if ok != wok || !next.Equal(wnext) {
				rt.Fatalf("serializer's next deadline = %v (%v), model's %v (%v)", next, ok, wnext, wok)
			}
		}
	})
}
