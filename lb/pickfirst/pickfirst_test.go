package pickfirst_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/lbtest"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

const (
	connecting = lb.Connecting
	ready      = lb.Ready
	idle       = lb.Idle
	tf         = lb.TransientFailure
)

// backoff stands for a SubConn's reconnect backoff; the policy has no timer
// of its own, so the tests only move the clock to show time passing.
const backoff = time.Second

func TestRegisteredAsPickFirst(t *testing.T) {
	b := lb.Get(pickfirst.Name)
	if _, ok := b.(pickfirst.Builder); !ok {
		t.Fatalf("lb.Get(%q) = %T, want pickfirst.Builder", pickfirst.Name, b)
	}
	if pickfirst.Name != "pick_first" {
		t.Fatalf("Name = %q, want pick_first", pickfirst.Name)
	}
}

func TestFirstAddressReady(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.h.WantEvents(state(connecting), newSC(0, "a"), connect(0, "a"))
	e.wantQueue()

	e.h.SubConn(0).Connecting()
	e.h.WantEvents() // already CONNECTING
	e.h.SubConn(0).Ready()
	e.h.WantEvents(state(ready))
	e.wantPick(e.h.SubConn(0))
}

func TestFirstAddressDownSecondReady(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b", "c")
	e.h.WantEvents(state(connecting), newSC(0, "a"), connect(0, "a"))

	e.h.SubConn(0).Connecting()
	e.h.SubConn(0).Fail(errors.New("a refused"))
	e.h.WantEvents(newSC(1, "b"), connect(1, "b"))
	e.wantQueue() // still CONNECTING: the first pass is not over

	e.h.SubConn(1).Connecting()
	e.h.SubConn(1).Ready()
	e.h.WantEvents(shutdown(0, "a"), state(ready))
	e.wantPick(e.h.SubConn(1))
}

func TestAllDownStickyTransientFailure(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.h.WantEvents(state(connecting), newSC(0, "a"), connect(0, "a"))
	a, errA := e.h.SubConn(0), errors.New("a refused")
	a.Connecting()
	a.Fail(errA)
	e.h.WantEvents(newSC(1, "b"), connect(1, "b"))
	b, errB := e.h.SubConn(1), errors.New("b refused")
	b.Connecting()
	b.Fail(errB)
	// Every address failed once: TRANSIENT_FAILURE with the last error.
	e.h.WantEvents(state(tf), resolveNow)
	e.wantTF(errB)
	// Wait-for-ready requests queue, the others fail.
	if got := lb.ClassifyPickError(e.pickErr()); got != lb.PickFailUnlessWaitForReady {
		t.Fatalf("TRANSIENT_FAILURE pick error classified %v, want %v", got, lb.PickFailUnlessWaitForReady)
	}

	// Keep reconnecting each SubConn as it leaves backoff, indefinitely;
	// the picker's error is refreshed once per two failures.
	for range 5 {
		e.h.Advance(backoff)
		a.Idle()
		e.h.WantEvents(connect(0, "a"))
		a.Connecting()
		errA := errors.New("a refused again")
		a.Fail(errA)
		e.h.WantEvents() // one failure of two: no refresh yet
		b.Idle()
		e.h.WantEvents(connect(1, "b"))
		b.Connecting()
		errB := errors.New("b refused again")
		b.Fail(errB)
		e.h.WantEvents(state(tf), resolveNow)
		e.wantTF(errB)
	}
	for _, s := range e.h.CC.States.All()[2:] {
		if s.ConnectivityState != tf {
			t.Fatalf("reported %v while sticky in TRANSIENT_FAILURE", s.ConnectivityState)
		}
	}

	// A reconnection finally succeeds.
	a.Idle()
	e.h.WantEvents(connect(0, "a"))
	a.Ready()
	e.h.WantEvents(shutdown(1, "b"), state(ready))
	e.wantPick(a)
}

func TestSkipsAddressInBackoff(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b", "c")
	e.h.SubConn(0).Fail(errors.New("a down"))
	e.h.SubConn(1).Ready()
	e.h.SubConn(1).Idle() // connection lost
	e.h.WantEvents(state(connecting), newSC(0, "a"), connect(0, "a"), newSC(1, "b"), connect(1, "b"),
		shutdown(0, "a"), state(ready), state(idle), resolveNow)

	// A new SubConn for "a" fails; the pass moves to "b", whose SubConn is in
	// TRANSIENT_FAILURE (backing off): it is skipped at once for "c".
	e.h.ExitIdle()
	e.h.WantEvents(state(connecting), newSC(2, "a"), connect(2, "a"))
	e.h.SubConn(1).Connecting() // an attempt nobody asked for, then a failure
	e.h.SubConn(1).Fail(errors.New("b down"))
	e.h.WantEvents()
	e.h.SubConn(2).Fail(errors.New("a down"))
	e.h.WantEvents(newSC(3, "c"), connect(3, "c"))
	e.wantQueue()
}

func TestStickyTransientFailureAcrossAddressUpdate(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.h.SubConn(0).Fail(errors.New("a down"))
	e.h.SubConn(1).Fail(errors.New("b down"))
	e.h.WantEvents(state(connecting), newSC(0, "a"), connect(0, "a"), newSC(1, "b"), connect(1, "b"), state(tf), resolveNow)

	// "a" goes, "c" comes. "b" is backing off, so the new pass skips it and
	// connects "c" while still reporting TRANSIENT_FAILURE.
	e.mustUpdate("b", "c")
	e.h.WantEvents(shutdown(0, "a"), newSC(2, "c"), connect(2, "c"))
	e.wantTF()
	// "b" leaves backoff during the pass: it waits for the pass to end.
	e.h.Advance(backoff)
	e.h.SubConn(1).Idle()
	e.h.WantEvents()
	errC := errors.New("c down")
	e.h.SubConn(2).Fail(errC)
	e.h.WantEvents(state(tf), resolveNow, connect(1, "b"))
	e.wantTF(errC)

	e.h.SubConn(1).Ready()
	e.h.WantEvents(shutdown(2, "c"), state(ready))
	e.wantPick(e.h.SubConn(1))
}

func TestUpdateKeepsSelectedAddress(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.h.SubConn(0).Fail(errors.New("a down"))
	e.h.SubConn(1).Ready()
	e.h.CC.TakeEvents()
	picker := e.h.State().Picker

	e.mustUpdate("c", "b", "d")
	e.h.WantEvents() // no SubConn, no state
	if p := e.h.State().Picker; p != picker {
		t.Fatalf("picker replaced on an update that keeps the READY address")
	}
	e.wantPick(e.h.SubConn(1))

	// The new list is used when the connection is lost: "c" first.
	e.h.SubConn(1).Idle()
	e.h.WantEvents(state(idle), resolveNow)
	e.h.ExitIdle()
	e.h.WantEvents(state(connecting), newSC(2, "c"), connect(2, "c"))
}

func TestUpdateRemovesSelectedAddress(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.h.SubConn(0).Ready()
	e.h.WantEvents(state(connecting), newSC(0, "a"), connect(0, "a"), state(ready))

	// As grpc-go: CONNECTING at once and a new pass; no IDLE and no
	// re-resolution (the resolver has just spoken).
	e.mustUpdate("b", "c")
	e.h.WantEvents(shutdown(0, "a"), state(connecting), newSC(1, "b"), connect(1, "b"))
	e.wantQueue()
	e.h.SubConn(1).Ready()
	e.h.WantEvents(state(ready))
	e.wantPick(e.h.SubConn(1))
}

func TestUpdateWhileConnectingRestartsPass(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.h.SubConn(0).Fail(errors.New("a down"))
	e.h.SubConn(1).Connecting()
	e.h.CC.TakeEvents()

	// "b" is being connected; the new list puts "c" first. The pass
	// restarts from "c" without a second CONNECTING report, and "b" is kept.
	e.mustUpdate("c", "b")
	e.h.WantEvents(shutdown(0, "a"), newSC(2, "c"), connect(2, "c"))
	e.h.SubConn(1).Ready() // the old attempt wins: any READY SubConn is taken
	e.h.WantEvents(shutdown(2, "c"), state(ready))
	e.wantPick(e.h.SubConn(1))
}

func TestEmptyAddressListIsNotSticky(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.h.SubConn(0).Fail(errors.New("a down"))
	e.h.WantEvents(state(connecting), newSC(0, "a"), connect(0, "a"), state(tf), resolveNow)

	err := e.update(nil)
	if !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("empty update returned %v, want ErrBadResolverState", err)
	}
	e.h.WantEvents(shutdown(0, "a"), state(tf))
	e.wantTF()
	if err := e.pickErr(); !errors.Is(err, resolver.ErrNoAddresses) {
		t.Fatalf("pick error %v, want resolver.ErrNoAddresses", err)
	}

	// Not sticky: the next good update reports CONNECTING.
	e.mustUpdate("b")
	e.h.WantEvents(state(connecting), newSC(1, "b"), connect(1, "b"))
}

func TestReadyIdlePickReconnectsFromFirstAddress(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.h.SubConn(0).Fail(errors.New("a down"))
	e.h.SubConn(1).Ready()
	e.h.WantEvents(state(connecting), newSC(0, "a"), connect(0, "a"), newSC(1, "b"), connect(1, "b"),
		shutdown(0, "a"), state(ready))

	e.h.SubConn(1).Idle()
	e.h.WantEvents(state(idle), resolveNow)
	idlePicker := e.h.State().Picker

	// Many picks queue, and leave IDLE exactly once.
	for range 5 {
		if _, err := idlePicker.Pick(lb.PickInfo{Ctx: context.Background()}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
			t.Fatalf("IDLE pick error %v, want ErrNoSubConnAvailable", err)
		}
	}
	e.h.Settle()
	e.h.WantEvents(state(connecting), newSC(2, "a"), connect(2, "a"))
	idlePicker.Pick(lb.PickInfo{Ctx: context.Background()})
	e.h.Settle()
	e.h.WantEvents()

	// The pass goes on to "b", reusing its SubConn.
	e.h.SubConn(2).Fail(errors.New("a down"))
	e.h.WantEvents(connect(1, "b"))
	e.h.SubConn(1).Ready()
	e.h.WantEvents(shutdown(2, "a"), state(ready))
	e.wantPick(e.h.SubConn(1))
}

// An update that arrives between ExitIdle and the first SubConn report must
// not leave the policy wedged in IDLE.
func TestExitIdleReportsConnectingAtOnce(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.h.SubConn(0).Ready()
	e.h.SubConn(0).Idle()
	e.h.CC.TakeEvents()

	e.h.ExitIdle()
	e.h.WantEvents(state(connecting), connect(0, "a"))
	e.mustUpdate("b")
	e.h.WantEvents(shutdown(0, "a"), newSC(1, "b"), connect(1, "b"))
	e.wantQueue()
	e.h.ExitIdle() // not IDLE: nothing
	e.h.WantEvents()
}

func TestUpdateWhileIdleStaysIdle(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.h.SubConn(0).Ready()
	e.h.SubConn(0).Idle()
	e.h.CC.TakeEvents()

	e.mustUpdate("b", "c")
	e.h.WantEvents(shutdown(0, "a"))
	if s := e.h.State().ConnectivityState; s != idle {
		t.Fatalf("state %v, want IDLE", s)
	}
	e.h.ExitIdle()
	e.h.WantEvents(state(connecting), newSC(1, "b"), connect(1, "b"))
}

func TestResolverErrorBeforeAnyUpdate(t *testing.T) {
	e := newEnv(t)
	errRes := errors.New("no such host")
	e.h.ResolverError(errRes)
	e.h.WantEvents(state(tf))
	e.wantTF(errRes)

	// Not sticky: the first addresses report CONNECTING.
	e.mustUpdate("a")
	e.h.WantEvents(state(connecting), newSC(0, "a"), connect(0, "a"))
}

func TestResolverErrorWhileReadyIsIgnored(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.h.ResolverError(errors.New("while connecting"))
	e.h.SubConn(0).Ready()
	e.h.CC.TakeEvents()
	e.h.ResolverError(errors.New("while ready"))
	e.h.WantEvents()
	e.wantPick(e.h.SubConn(0))
	e.h.SubConn(0).Idle()
	e.h.CC.TakeEvents()
	e.h.ResolverError(errors.New("while idle"))
	e.h.WantEvents()
}

func TestResolverErrorInTransientFailureRefreshesPicker(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	errA := errors.New("a down")
	e.h.SubConn(0).Fail(errA)
	e.h.CC.TakeEvents()
	errRes := errors.New("dns timeout")
	e.h.ResolverError(errRes)
	e.h.WantEvents(state(tf))
	e.wantTF(errRes, errA)

	// Still sticky: an update keeps TRANSIENT_FAILURE.
	e.mustUpdate("a", "b")
	e.h.WantEvents(newSC(1, "b"), connect(1, "b"))
	e.wantTF()
}

func TestDuplicateAddresses(t *testing.T) {
	e := newEnv(t)
	a := resolver.Address{Addr: "a"}
	aNamed := resolver.Address{Addr: "a", ServerName: "x"}
	aWeighted := weight.Set(a, 3)
	list := []resolver.Address{a, aNamed, a, aWeighted, aNamed, weight.Set(a, 3)}
	if err := e.h.UpdateAddresses(nil, list...); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e.h.SubConn(i).Fail(errors.New("down"))
	}
	if s := e.h.State().ConnectivityState; s != tf {
		t.Fatalf("state %v after 3 failures, want TRANSIENT_FAILURE", s)
	}
	scs := e.h.CC.SubConns()
	want := []resolver.Address{a, aNamed, aWeighted}
	if len(scs) != len(want) {
		t.Fatalf("%d SubConns, want %d (one per distinct address)", len(scs), len(want))
	}
	for i, sc := range scs {
		if got := sc.Addresses(); len(got) != 1 || got[0] != want[i] {
			t.Errorf("SubConn %d has %v, want [%v]", i, got, want[i])
		}
	}
}

func TestConnectingToIdleDuringPassReconnects(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.h.SubConn(0).Connecting()
	e.h.CC.TakeEvents()
	e.h.SubConn(0).Idle() // the attempt ended without READY or a failure
	e.h.WantEvents(connect(0, "a"))
	e.wantQueue()
}

func TestFailureWithoutErrorNamesAddress(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.h.SubConn(0).UpdateState(lb.SubConnState{ConnectivityState: tf})
	e.wantTF()
	if msg := e.pickErr().Error(); !strings.Contains(msg, "connection to a failed") {
		t.Fatalf("pick error %q does not name the address", msg)
	}
}

func TestNewSubConnFailure(t *testing.T) {
	e := newEnv(t)
	errNew := errors.New("channel closing")
	e.h.CC.FailNewSubConn(errNew)
	e.mustUpdate("a", "b")
	e.h.WantEvents(state(connecting), state(tf), resolveNow)
	e.wantTF(errNew)

	e.h.CC.FailNewSubConn(nil)
	e.mustUpdate("a", "b")
	e.h.WantEvents(newSC(0, "a"), connect(0, "a")) // sticky: no CONNECTING
}

func TestWrongConfigTypeIsRejected(t *testing.T) {
	e := newEnv(t)
	err := e.update("not a pickfirst.Config", "a")
	if !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("update with a string config returned %v, want ErrBadResolverState", err)
	}
	e.h.WantEvents()
	for _, cfg := range []lb.Config{pickfirst.Config{}, &pickfirst.Config{}, (*pickfirst.Config)(nil)} {
		if err := e.update(cfg, "a"); err != nil {
			t.Fatalf("update with %#v returned %v", cfg, err)
		}
	}
}

func TestCloseShutsDownEverySubConn(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b", "c")
	e.h.SubConn(0).Fail(errors.New("down"))
	e.h.SubConn(1).Fail(errors.New("down"))
	e.h.CC.TakeEvents()

	e.h.CloseBalancer()
	e.h.WantEvents(shutdown(0, "a"), shutdown(1, "b"), shutdown(2, "c"))

	// Calls after Close do nothing and do not panic.
	if err := e.update(nil, "d"); err != nil {
		t.Fatalf("update after Close returned %v", err)
	}
	e.h.ResolverError(errors.New("late"))
	e.h.ExitIdle()
	e.h.CloseBalancer()
	e.h.Settle()
	e.h.WantEvents()
}

func TestIdlePickerAfterCloseDoesNothing(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.h.SubConn(0).Ready()
	e.h.SubConn(0).Idle()
	p := e.h.State().Picker
	e.h.CloseBalancer()
	e.h.CC.TakeEvents()
	if _, err := p.Pick(lb.PickInfo{Ctx: context.Background()}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Fatalf("pick error %v, want ErrNoSubConnAvailable", err)
	}
	e.h.Settle()
	e.h.WantEvents()
}

// TestDrainingAddressIsTriedLast: a draining address (package draining)
// is tried after every other one, whatever its place in the list, and is
// used when no other connects.
func TestDrainingAddressIsTriedLast(t *testing.T) {
	e := newEnv(t)
	as := lbtest.Addresses("a", "b")
	as[0] = draining.Set(as[0])
	if err := e.h.UpdateAddresses(nil, as...); err != nil {
		t.Fatal(err)
	}
	if got := e.h.SubConn(0).Addresses()[0]; got.Addr != "b" {
		t.Fatalf("first SubConn for %v, want b: the draining a goes last", got)
	}
	e.h.SubConn(0).Fail(errors.New("b refused"))
	if got := e.h.SubConn(1).Addresses()[0]; got.Addr != "a" || !draining.Is(got) {
		t.Fatalf("second SubConn for %v, want the draining a", got)
	}
	e.h.SubConn(1).Ready()
	e.wantPick(e.h.SubConn(1))
}
