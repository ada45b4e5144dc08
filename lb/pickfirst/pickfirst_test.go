package pickfirst_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb/draining"

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
	e.want(state(connecting), newSC(0, "a"), connect(0, "a"))
	e.wantQueue()

	e.sc(0).Connecting()
	e.want() // already CONNECTING
	e.sc(0).Ready()
	e.want(state(ready))
	e.wantPick(e.sc(0))
}

func TestFirstAddressDownSecondReady(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b", "c")
	e.want(state(connecting), newSC(0, "a"), connect(0, "a"))

	e.sc(0).Connecting()
	e.sc(0).Fail(errors.New("a refused"))
	e.want(newSC(1, "b"), connect(1, "b"))
	e.wantQueue() // still CONNECTING: the first pass is not over

	e.sc(1).Connecting()
	e.sc(1).Ready()
	e.want(shutdown(0, "a"), state(ready))
	e.wantPick(e.sc(1))
}

func TestAllDownStickyTransientFailure(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.want(state(connecting), newSC(0, "a"), connect(0, "a"))
	a, errA := e.sc(0), errors.New("a refused")
	a.Connecting()
	a.Fail(errA)
	e.want(newSC(1, "b"), connect(1, "b"))
	b, errB := e.sc(1), errors.New("b refused")
	b.Connecting()
	b.Fail(errB)
	// Every address failed once: TRANSIENT_FAILURE with the last error.
	e.want(state(tf), resolveNow)
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
		e.want(connect(0, "a"))
		a.Connecting()
		errA := errors.New("a refused again")
		a.Fail(errA)
		e.want() // one failure of two: no refresh yet
		b.Idle()
		e.want(connect(1, "b"))
		b.Connecting()
		errB := errors.New("b refused again")
		b.Fail(errB)
		e.want(state(tf), resolveNow)
		e.wantTF(errB)
	}
	for _, s := range e.h.CC.States.All()[2:] {
		if s.ConnectivityState != tf {
			t.Fatalf("reported %v while sticky in TRANSIENT_FAILURE", s.ConnectivityState)
		}
	}

	// A reconnection finally succeeds.
	a.Idle()
	e.want(connect(0, "a"))
	a.Ready()
	e.want(shutdown(1, "b"), state(ready))
	e.wantPick(a)
}

func TestSkipsAddressInBackoff(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b", "c")
	e.sc(0).Fail(errors.New("a down"))
	e.sc(1).Ready()
	e.sc(1).Idle() // connection lost
	e.want(state(connecting), newSC(0, "a"), connect(0, "a"), newSC(1, "b"), connect(1, "b"),
		shutdown(0, "a"), state(ready), state(idle), resolveNow)

	// A new SubConn for "a" fails; the pass moves to "b", whose SubConn is in
	// TRANSIENT_FAILURE (backing off): it is skipped at once for "c".
	e.h.ExitIdle()
	e.want(state(connecting), newSC(2, "a"), connect(2, "a"))
	e.sc(1).Connecting() // an attempt nobody asked for, then a failure
	e.sc(1).Fail(errors.New("b down"))
	e.want()
	e.sc(2).Fail(errors.New("a down"))
	e.want(newSC(3, "c"), connect(3, "c"))
	e.wantQueue()
}

func TestStickyTransientFailureAcrossAddressUpdate(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.sc(0).Fail(errors.New("a down"))
	e.sc(1).Fail(errors.New("b down"))
	e.want(state(connecting), newSC(0, "a"), connect(0, "a"), newSC(1, "b"), connect(1, "b"), state(tf), resolveNow)

	// "a" goes, "c" comes. "b" is backing off, so the new pass skips it and
	// connects "c" while still reporting TRANSIENT_FAILURE.
	e.mustUpdate("b", "c")
	e.want(shutdown(0, "a"), newSC(2, "c"), connect(2, "c"))
	e.wantTF()
	// "b" leaves backoff during the pass: it waits for the pass to end.
	e.h.Advance(backoff)
	e.sc(1).Idle()
	e.want()
	errC := errors.New("c down")
	e.sc(2).Fail(errC)
	e.want(state(tf), resolveNow, connect(1, "b"))
	e.wantTF(errC)

	e.sc(1).Ready()
	e.want(shutdown(2, "c"), state(ready))
	e.wantPick(e.sc(1))
}

func TestUpdateKeepsSelectedAddress(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.sc(0).Fail(errors.New("a down"))
	e.sc(1).Ready()
	e.events()
	picker := e.state().Picker

	e.mustUpdate("c", "b", "d")
	e.want() // no SubConn, no state
	if p := e.state().Picker; p != picker {
		t.Fatalf("picker replaced on an update that keeps the READY address")
	}
	e.wantPick(e.sc(1))

	// The new list is used when the connection is lost: "c" first.
	e.sc(1).Idle()
	e.want(state(idle), resolveNow)
	e.h.ExitIdle()
	e.want(state(connecting), newSC(2, "c"), connect(2, "c"))
}

func TestUpdateRemovesSelectedAddress(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.sc(0).Ready()
	e.want(state(connecting), newSC(0, "a"), connect(0, "a"), state(ready))

	// As grpc-go: CONNECTING at once and a new pass; no IDLE and no
	// re-resolution (the resolver has just spoken).
	e.mustUpdate("b", "c")
	e.want(shutdown(0, "a"), state(connecting), newSC(1, "b"), connect(1, "b"))
	e.wantQueue()
	e.sc(1).Ready()
	e.want(state(ready))
	e.wantPick(e.sc(1))
}

func TestUpdateWhileConnectingRestartsPass(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.sc(0).Fail(errors.New("a down"))
	e.sc(1).Connecting()
	e.events()

	// "b" is being connected; the new list puts "c" first. The pass
	// restarts from "c" without a second CONNECTING report, and "b" is kept.
	e.mustUpdate("c", "b")
	e.want(shutdown(0, "a"), newSC(2, "c"), connect(2, "c"))
	e.sc(1).Ready() // the old attempt wins: any READY SubConn is taken
	e.want(shutdown(2, "c"), state(ready))
	e.wantPick(e.sc(1))
}

func TestEmptyAddressListIsNotSticky(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.sc(0).Fail(errors.New("a down"))
	e.want(state(connecting), newSC(0, "a"), connect(0, "a"), state(tf), resolveNow)

	err := e.update(nil)
	if !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("empty update returned %v, want ErrBadResolverState", err)
	}
	e.want(shutdown(0, "a"), state(tf))
	e.wantTF()
	if err := e.pickErr(); !errors.Is(err, resolver.ErrNoAddresses) {
		t.Fatalf("pick error %v, want resolver.ErrNoAddresses", err)
	}

	// Not sticky: the next good update reports CONNECTING.
	e.mustUpdate("b")
	e.want(state(connecting), newSC(1, "b"), connect(1, "b"))
}

func TestReadyIdlePickReconnectsFromFirstAddress(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b")
	e.sc(0).Fail(errors.New("a down"))
	e.sc(1).Ready()
	e.want(state(connecting), newSC(0, "a"), connect(0, "a"), newSC(1, "b"), connect(1, "b"),
		shutdown(0, "a"), state(ready))

	e.sc(1).Idle()
	e.want(state(idle), resolveNow)
	idlePicker := e.state().Picker

	// Many picks queue, and leave IDLE exactly once.
	for range 5 {
		if _, err := idlePicker.Pick(lb.PickInfo{Ctx: context.Background()}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
			t.Fatalf("IDLE pick error %v, want ErrNoSubConnAvailable", err)
		}
	}
	e.h.Settle()
	e.want(state(connecting), newSC(2, "a"), connect(2, "a"))
	idlePicker.Pick(lb.PickInfo{Ctx: context.Background()})
	e.h.Settle()
	e.want()

	// The pass goes on to "b", reusing its SubConn.
	e.sc(2).Fail(errors.New("a down"))
	e.want(connect(1, "b"))
	e.sc(1).Ready()
	e.want(shutdown(2, "a"), state(ready))
	e.wantPick(e.sc(1))
}

// An update that arrives between ExitIdle and the first SubConn report must
// not leave the policy wedged in IDLE.
func TestExitIdleReportsConnectingAtOnce(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.sc(0).Ready()
	e.sc(0).Idle()
	e.events()

	e.h.ExitIdle()
	e.want(state(connecting), connect(0, "a"))
	e.mustUpdate("b")
	e.want(shutdown(0, "a"), newSC(1, "b"), connect(1, "b"))
	e.wantQueue()
	e.h.ExitIdle() // not IDLE: nothing
	e.want()
}

func TestUpdateWhileIdleStaysIdle(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.sc(0).Ready()
	e.sc(0).Idle()
	e.events()

	e.mustUpdate("b", "c")
	e.want(shutdown(0, "a"))
	if s := e.state().ConnectivityState; s != idle {
		t.Fatalf("state %v, want IDLE", s)
	}
	e.h.ExitIdle()
	e.want(state(connecting), newSC(1, "b"), connect(1, "b"))
}

func TestResolverErrorBeforeAnyUpdate(t *testing.T) {
	e := newEnv(t)
	errRes := errors.New("no such host")
	e.h.ResolverError(errRes)
	e.want(state(tf))
	e.wantTF(errRes)

	// Not sticky: the first addresses report CONNECTING.
	e.mustUpdate("a")
	e.want(state(connecting), newSC(0, "a"), connect(0, "a"))
}

func TestResolverErrorWhileReadyIsIgnored(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.h.ResolverError(errors.New("while connecting"))
	e.sc(0).Ready()
	e.events()
	e.h.ResolverError(errors.New("while ready"))
	e.want()
	e.wantPick(e.sc(0))
	e.sc(0).Idle()
	e.events()
	e.h.ResolverError(errors.New("while idle"))
	e.want()
}

func TestResolverErrorInTransientFailureRefreshesPicker(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	errA := errors.New("a down")
	e.sc(0).Fail(errA)
	e.events()
	errRes := errors.New("dns timeout")
	e.h.ResolverError(errRes)
	e.want(state(tf))
	e.wantTF(errRes, errA)

	// Still sticky: an update keeps TRANSIENT_FAILURE.
	e.mustUpdate("a", "b")
	e.want(newSC(1, "b"), connect(1, "b"))
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
		e.sc(i).Fail(errors.New("down"))
	}
	if s := e.state().ConnectivityState; s != tf {
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
	e.sc(0).Connecting()
	e.events()
	e.sc(0).Idle() // the attempt ended without READY or a failure
	e.want(connect(0, "a"))
	e.wantQueue()
}

func TestFailureWithoutErrorNamesAddress(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.sc(0).UpdateState(lb.SubConnState{ConnectivityState: tf})
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
	e.want(state(connecting), state(tf), resolveNow)
	e.wantTF(errNew)

	e.h.CC.FailNewSubConn(nil)
	e.mustUpdate("a", "b")
	e.want(newSC(0, "a"), connect(0, "a")) // sticky: no CONNECTING
}

func TestWrongConfigTypeIsRejected(t *testing.T) {
	e := newEnv(t)
	err := e.update("not a pickfirst.Config", "a")
	if !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("update with a string config returned %v, want ErrBadResolverState", err)
	}
	e.want()
	for _, cfg := range []lb.Config{pickfirst.Config{}, &pickfirst.Config{}, (*pickfirst.Config)(nil)} {
		if err := e.update(cfg, "a"); err != nil {
			t.Fatalf("update with %#v returned %v", cfg, err)
		}
	}
}

func TestCloseShutsDownEverySubConn(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a", "b", "c")
	e.sc(0).Fail(errors.New("down"))
	e.sc(1).Fail(errors.New("down"))
	e.events()

	e.h.CloseBalancer()
	e.want(shutdown(0, "a"), shutdown(1, "b"), shutdown(2, "c"))

	// Calls after Close do nothing and do not panic.
	if err := e.update(nil, "d"); err != nil {
		t.Fatalf("update after Close returned %v", err)
	}
	e.h.ResolverError(errors.New("late"))
	e.h.ExitIdle()
	e.h.CloseBalancer()
	e.h.Settle()
	e.want()
}

func TestIdlePickerAfterCloseDoesNothing(t *testing.T) {
	e := newEnv(t)
	e.mustUpdate("a")
	e.sc(0).Ready()
	e.sc(0).Idle()
	p := e.state().Picker
	e.h.CloseBalancer()
	e.events()
	if _, err := p.Pick(lb.PickInfo{Ctx: context.Background()}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Fatalf("pick error %v, want ErrNoSubConnAvailable", err)
	}
	e.h.Settle()
	e.want()
}

// TestDrainingAddressIsTriedLast: a draining address (package draining)
// is tried after every other one, whatever its place in the list, and is
// used when no other connects.
func TestDrainingAddressIsTriedLast(t *testing.T) {
	e := newEnv(t)
	as := addrs("a", "b")
	as[0] = draining.Set(as[0])
	if err := e.h.UpdateAddresses(nil, as...); err != nil {
		t.Fatal(err)
	}
	if got := e.sc(0).Addresses()[0]; got.Addr != "b" {
		t.Fatalf("first SubConn for %v, want b: the draining a goes last", got)
	}
	e.sc(0).Fail(errors.New("b refused"))
	if got := e.sc(1).Addresses()[0]; got.Addr != "a" || !draining.Is(got) {
		t.Fatalf("second SubConn for %v, want the draining a", got)
	}
	e.sc(1).Ready()
	e.wantPick(e.sc(1))
}
