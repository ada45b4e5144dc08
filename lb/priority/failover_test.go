package priority

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

var errConn = errors.New("connection refused")

// twoLeaves is a config of two test_leaf children, p0 and p1, with one
// address each.
func twoLeaves(e *env) {
	e.t.Helper()
	e.update([]resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0"), lbtest.PathAddr("10.0.1.1:80", "p1")},
		leafChild("p0"), leafChild("p1"))
}

func TestTypicalFailoverFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	twoLeaves(e)
	if n := len(e.h.CC.SubConns()); n != 1 {
		t.Fatalf("after the first update %d SubConns, want 1 (p1 must not be created)", n)
	}
	if got := e.childNames(); !slices.Equal(got, []string{"p0"}) {
		t.Fatalf("children = %v, want [p0]", got)
	}
	e.h.WantPicker(lb.Connecting, "<queue>")
	sc0 := e.h.SubConnFor("10.0.0.1:80")

	// p0 fails: p1 is created and used.
	sc0.Fail(errConn)
	sc1 := e.h.SubConnFor("10.0.1.1:80")
	e.h.WantPicker(lb.Connecting, "<queue>")
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1"}) {
		t.Fatalf("children = %v, want [p0 p1]", got)
	}
	sc1.Ready()
	e.h.WantPicker(lb.Ready, "<leaf>")
	if got := pick(t, e.h.State().Picker); got != sc1 {
		t.Fatalf("picked %v, want p1's %v", got, sc1)
	}

	// p0 is READY again: back to p0, p1 deactivated.
	sc0.Ready()
	if got := pick(t, e.h.State().Picker); got != sc0 {
		t.Fatalf("picked %v, want p0's %v", got, sc0)
	}
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1(inactive)"}) {
		t.Fatalf("children = %v, want [p0 p1(inactive)]", got)
	}

	// p0 fails again within 15 minutes: p1 is reused, no new SubConn.
	e.h.Advance(10 * time.Minute)
	sc0.Fail(errConn)
	if n := len(e.h.CC.SubConns()); n != 2 {
		t.Fatalf("%d SubConns after p0 failed again, want 2 (p1 reused)", n)
	}
	e.h.WantPicker(lb.Ready, "<leaf>")
	if got := pick(t, e.h.State().Picker); got != sc1 {
		t.Fatalf("picked %v, want p1's %v (its last picker)", got, sc1)
	}
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1"}) {
		t.Fatalf("children = %v, want p1 reactivated", got)
	}

	// p0 READY again: p1 deactivated anew, destroyed exactly 15 min later.
	sc0.Ready()
	e.h.Advance(retain - time.Nanosecond)
	if sc1.IsShutdown() || e.child("p1") == nil {
		t.Fatalf("p1 destroyed before 15 min")
	}
	e.h.Advance(time.Nanosecond)
	if !sc1.IsShutdown() || e.child("p1") != nil {
		t.Fatalf("p1 not destroyed at 15 min: SubConn shut down %v", sc1.IsShutdown())
	}
	if sc0.IsShutdown() {
		t.Fatalf("p0's SubConn was shut down")
	}
	if got := pick(t, e.h.State().Picker); got != sc0 {
		t.Fatalf("picked %v after p1's removal, want %v", got, sc0)
	}
}

func TestFailoverTimerStartsNextPriority(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	twoLeaves(e)
	// p0 stays CONNECTING.
	e.h.Advance(failover - time.Nanosecond)
	if n := len(e.h.CC.SubConns()); n != 1 {
		t.Fatalf("p1 created before the failover timeout (%d SubConns)", n)
	}
	e.h.Advance(time.Nanosecond)
	if n := len(e.h.CC.SubConns()); n != 2 {
		t.Fatalf("p1 not created at the failover timeout (%d SubConns)", n)
	}
	// p0 is treated as TRANSIENT_FAILURE; p1 (timer pending) is used.
	if s := e.child("p0").Data.state; s != lb.TransientFailure {
		t.Errorf("p0's state after its timer = %v, want TRANSIENT_FAILURE", s)
	}
	if !e.failoverPending("p1") || e.failoverPending("p0") {
		t.Errorf("failover pending: p0 %v, p1 %v; want false, true", e.failoverPending("p0"), e.failoverPending("p1"))
	}
	e.h.WantPicker(lb.Connecting, "<queue>")

	// p1's timer fires too: nothing is CONNECTING any more (both are
	// treated as TRANSIENT_FAILURE), so the last child, p1, is used, in
	// TRANSIENT_FAILURE with its own last picker.
	e.h.Advance(failover)
	e.h.WantPicker(lb.TransientFailure, "<queue>")

	// p0 really connecting again does not restart its timer (TF was more
	// recent than READY), but the first CONNECTING child wins over the last.
	e.h.SubConnFor("10.0.0.1:80").Connecting()
	if e.failoverPending("p0") {
		t.Errorf("p0's failover timer restarted by CONNECTING after TRANSIENT_FAILURE")
	}
	if got := e.current(); got != "p0" {
		t.Errorf("current child = %q, want p0 (first CONNECTING)", got)
	}
}

func TestFailoverTimerRestartRules(t *testing.T) {
	t.Parallel()
	t.Run("duplicate CONNECTING does not restart", func(t *testing.T) {
		e := newEnv(t)
		twoLeaves(e)
		sc0 := e.h.SubConnFor("10.0.0.1:80")
		sc0.Ready()
		sc0.Connecting() // READY -> CONNECTING: the timer starts now
		if !e.failoverPending("p0") {
			t.Fatalf("READY -> CONNECTING did not start the failover timer")
		}
		e.h.Advance(5 * time.Second)
		sc0.Connecting() // repeated: must not restart it
		e.h.Advance(5*time.Second - time.Nanosecond)
		if e.child("p1") != nil {
			t.Fatalf("p1 created before the first timer's deadline")
		}
		e.h.Advance(time.Nanosecond)
		if e.child("p1") == nil {
			t.Fatalf("p1 not created 10 s after READY -> CONNECTING: the repeated CONNECTING restarted the timer")
		}
	})
	t.Run("IDLE then CONNECTING starts it", func(t *testing.T) {
		e := newEnv(t)
		twoLeaves(e)
		sc0 := e.h.SubConnFor("10.0.0.1:80")
		sc0.Idle()
		if e.failoverPending("p0") {
			t.Fatalf("IDLE did not stop the failover timer")
		}
		sc0.Connecting()
		if !e.failoverPending("p0") {
			t.Fatalf("IDLE -> CONNECTING did not start the failover timer")
		}
	})
	t.Run("TRANSIENT_FAILURE then CONNECTING does not start it", func(t *testing.T) {
		e := newEnv(t)
		twoLeaves(e)
		sc0 := e.h.SubConnFor("10.0.0.1:80")
		sc0.Ready()
		sc0.Fail(errConn)
		sc0.Connecting()
		if e.failoverPending("p0") {
			t.Fatalf("TRANSIENT_FAILURE -> CONNECTING started the failover timer")
		}
	})
	t.Run("READY, IDLE and TRANSIENT_FAILURE stop it", func(t *testing.T) {
		for _, report := range []func(*env){
			func(e *env) { e.h.SubConnFor("10.0.0.1:80").Ready() },
			func(e *env) { e.h.SubConnFor("10.0.0.1:80").Idle() },
			func(e *env) { e.h.SubConnFor("10.0.0.1:80").Fail(errConn) },
		} {
			e := newEnv(t)
			e.update([]resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0")}, leafChild("p0"))
			if !e.failoverPending("p0") {
				t.Fatalf("creating p0 did not start its failover timer")
			}
			report(e)
			if e.failoverPending("p0") {
				t.Errorf("failover timer still pending after %v", e.child("p0").Data.state)
			}
			if _, ok := e.h.Serializer.NextDeadline(); ok {
				t.Errorf("a timer is pending after %v", e.child("p0").Data.state)
			}
		}
	})
}

func TestIdleChildIsUsedLikeReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	twoLeaves(e)
	sc0 := e.h.SubConnFor("10.0.0.1:80")
	sc0.Fail(errConn)
	sc1 := e.h.SubConnFor("10.0.1.1:80")
	sc1.Ready()

	// p0 reports IDLE: it is chosen, and p1 is deactivated, as for READY.
	sc0.Idle()
	e.h.WantPicker(lb.Idle, "<queue>")
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1(inactive)"}) {
		t.Fatalf("children = %v, want [p0 p1(inactive)]", got)
	}
	// ExitIdle reaches p0 only.
	before0, before1 := sc0.ConnectCount(), sc1.ConnectCount()
	e.h.ExitIdle()
	if sc0.ConnectCount() != before0+1 || sc1.ConnectCount() != before1 {
		t.Errorf("ExitIdle: p0 connects %d -> %d, p1 %d -> %d; want only p0's to grow",
			before0, sc0.ConnectCount(), before1, sc1.ConnectCount())
	}
}

func TestIdleFirstChildDoesNotCreateLowerOnes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, inlineChild("p0", lb.Idle), scriptChild("p1"))
	e.h.WantPicker(lb.Idle, "inline:p0")
	if got := e.childNames(); !slices.Equal(got, []string{"p0"}) {
		t.Fatalf("children = %v, want [p0]", got)
	}
}

func TestLowerPrioritiesKeptWhileFailoverTimerPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptChild("p1"))
	e.h.Report("p1", lb.Ready, "p1-ready")
	// A new, higher p0 is created with its failover timer pending: it is
	// chosen, but p1 is not deactivated (A56: only a READY or IDLE choice
	// deactivates lower priorities).
	e.update(nil, scriptChild("p0"), scriptChild("p1"))
	e.h.WantPicker(lb.Connecting, "<queue>")
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1"}) {
		t.Fatalf("children = %v, want p1 still active", got)
	}
	// When p0's timer fires, p1 is used again at once.
	e.h.Advance(failover)
	e.h.WantPicker(lb.Ready, "p1-ready")
	// p0 READY: now p1 is deactivated.
	e.h.Report("p0", lb.Ready, "p0-ready")
	e.h.WantPicker(lb.Ready, "p0-ready")
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1(inactive)"}) {
		t.Fatalf("children = %v, want p1 deactivated", got)
	}
}

func TestDurationOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, WithFailoverTimeout(time.Second), WithDeactivationDelay(time.Minute),
		WithFailoverTimeout(0), WithDeactivationDelay(-1)) // ignored: not valid durations
	twoLeaves(e)
	e.h.Advance(time.Second - time.Nanosecond)
	if e.child("p1") != nil {
		t.Fatalf("p1 created before the 1 s failover timeout")
	}
	e.h.Advance(time.Nanosecond)
	if e.child("p1") == nil {
		t.Fatalf("p1 not created at the 1 s failover timeout")
	}
	e.h.SubConnFor("10.0.0.1:80").Ready()
	e.h.Advance(time.Minute - time.Nanosecond)
	if e.child("p1") == nil {
		t.Fatalf("p1 destroyed before the 1 min deactivation delay")
	}
	e.h.Advance(time.Nanosecond)
	if e.child("p1") != nil {
		t.Fatalf("p1 not destroyed at the 1 min deactivation delay")
	}
}

func TestRegisteredBuilder(t *testing.T) {
	t.Parallel()
	b, ok := lb.Get(Name).(*Builder)
	if !ok || b.Name() != Name {
		t.Fatalf("lb.Get(%q) = %v, want this package's builder", Name, lb.Get(Name))
	}
	if b.opts.failoverTimeout != DefaultFailoverTimeout || b.opts.deactivationDelay != DefaultDeactivationDelay || !b.opts.retainRemoved {
		t.Errorf("registered builder options = %+v, want the defaults", b.opts)
	}
}
