package weightedtarget

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestHierarchicalAddresses(t *testing.T) {
	t.Parallel()
	logs := &lbtest.Logs{}
	e := newEnv(t, lbtest.WithLogger(slog.New(logs)))
	e.update([]resolver.Address{
		lbtest.PathAddr("10.0.0.1:80", "a", "deeper"),
		lbtest.PathAddr("10.0.0.2:80", "a"),
		lbtest.PathAddr("10.0.9.9:80", "stranger"),
		{Addr: "10.9.9.9:80"},
		lbtest.PathAddr("10.0.1.1:80", "b"),
	}, scriptTarget("a", 1), scriptTarget("b", 1))
	got := e.h.Script("a").Updates()[0].ResolverState.Addresses
	if len(got) != 2 {
		t.Fatalf("a got %v, want its 2 addresses", got)
	}
	if p, ok := hierarchy.Get(got[0]); !ok || !slices.Equal(p, []string{"deeper"}) {
		t.Errorf("a's first address path = %v, %v; want [deeper]", p, ok)
	}
	if _, ok := hierarchy.Get(got[1]); ok || got[1].Addr != "10.0.0.2:80" {
		t.Errorf("a's second address = %v, want 10.0.0.2:80 without a path", got[1])
	}
	if got := e.h.Script("b").Updates()[0].ResolverState.Addresses; len(got) != 1 || got[0] != (resolver.Address{Addr: "10.0.1.1:80"}) {
		t.Errorf("b got %v, want the plain 10.0.1.1:80", got)
	}
	if a := e.h.Script("a").Updates()[0].ResolverState.Attributes; a.Len() != 1 {
		t.Errorf("resolver attributes not passed to the child: %v", a)
	}
	out := logs.String()
	for _, want := range []string{"1 address(es) without a hierarchy path", "child_name=stranger"} {
		if !strings.Contains(out, want) {
			t.Errorf("log does not mention %q:\n%s", want, out)
		}
	}
}

func TestChildUpdateErrorsAreReturned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// b has no address: test_leaf returns ErrBadResolverState.
	err := e.h.UpdateAddresses(e.config(leafTarget("a", 1), leafTarget("b", 1)), lbtest.PathAddr("10.0.0.1:80", "a"))
	if !errors.Is(err, lb.ErrBadResolverState) || !strings.Contains(err.Error(), `target "b"`) {
		t.Fatalf("UpdateClientConnState error = %v, want b's ErrBadResolverState", err)
	}
	if got := e.published(); got != 1 {
		t.Fatalf("published %d states, want 1", got)
	}
}

func TestResolverError(t *testing.T) {
	t.Parallel()
	boom := errors.New("resolver exploded")
	t.Run("no targets", func(t *testing.T) {
		e := newEnv(t)
		for _, want := range []error{boom, errConn} {
			e.h.ResolverError(want)
			err := pickErr(e.h.WantState(lb.TransientFailure).Picker)
			if !errors.Is(err, want) || !errors.Is(err, lb.ErrTransientFailure) {
				t.Fatalf("pick error %v, want %v as a transient failure", err, want)
			}
		}
	})
	t.Run("every target", func(t *testing.T) {
		e := newEnv(t)
		e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
		e.h.Report("a", lb.Ready, "r")
		n := e.published()
		e.h.ResolverError(boom)
		for _, id := range []string{"a", "b"} {
			if errs := e.h.Script(id).ResolverErrors(); len(errs) != 1 || !errors.Is(errs[0], boom) {
				t.Errorf("%s got resolver errors %v, want [%v]", id, errs, boom)
			}
		}
		if got := e.published(); got != n {
			t.Errorf("ResolverError published %d states though nothing changed", got-n)
		}
	})
}

func TestExitIdleReachesEveryTarget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1), scriptTarget("c", 1))
	e.h.Report("a", lb.Ready, "r")
	e.h.Report("b", lb.TransientFailure, "tf")
	// Children answering inline do not publish one by one.
	for _, id := range []string{"a", "b", "c"} {
		s := e.h.Script(id)
		s.SetOnExitIdle(func() { s.Report(lb.Ready, "woken") })
	}
	n := e.published()
	e.h.ExitIdle()
	for _, id := range []string{"a", "b", "c"} {
		if got := e.h.Script(id).ExitIdles(); got != 1 {
			t.Errorf("ExitIdle reached %s %d times, want 1", id, got)
		}
	}
	if got := e.published(); got != n+1 {
		t.Fatalf("ExitIdle published %d states, want 1", got-n)
	}
	checkPeriods(t, pickSeq(t, e.h.State().Picker, e.names("a", "b", "c"), 9), 3, map[string]int{"a": 1, "b": 1, "c": 1})
}

func TestIdleTargetIsAskedToLeaveIdle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	e.h.Report("a", lb.Ready, "r")
	e.h.Report("b", lb.Idle, "idle")
	if got := e.h.Script("b").ExitIdles(); got != 1 {
		t.Fatalf("IDLE target asked to leave IDLE %d times, want 1", got)
	}
	// A repeated IDLE report does not ask again; a new entry into IDLE
	// does.
	e.h.Report("b", lb.Idle, "idle2")
	e.h.Report("b", lb.Connecting, "c")
	e.h.Report("b", lb.Idle, "idle3")
	if got := e.h.Script("b").ExitIdles(); got != 2 {
		t.Fatalf("asked to leave IDLE %d times, want 2", got)
	}
	if got := e.h.Script("a").ExitIdles(); got != 0 {
		t.Errorf("READY target asked to leave IDLE %d times", got)
	}
}

func TestIdlePickerAsksTargetsToLeaveIdle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	e.h.Report("a", lb.Idle, "idle")
	e.h.Report("b", lb.Idle, "idle")
	p := e.h.WantState(lb.Idle).Picker
	before := e.h.Script("a").ExitIdles()
	for range 3 {
		if err := pickErr(p); !errors.Is(err, lb.ErrNoSubConnAvailable) {
			t.Fatalf("IDLE pick error %v, want ErrNoSubConnAvailable", err)
		}
	}
	e.h.Settle()
	if got := e.h.Script("a").ExitIdles() - before; got != 1 {
		t.Fatalf("IDLE picker asked a to leave IDLE %d times, want 1", got)
	}
	// The targets stayed IDLE; a parent update publishes a fresh IDLE
	// picker, whose first pick asks again.
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	_ = pickErr(e.h.WantState(lb.Idle).Picker)
	e.h.Settle()
	if got := e.h.Script("a").ExitIdles() - before; got != 2 {
		t.Fatalf("after the update, a was asked to leave IDLE %d times in all, want 2", got)
	}
}

func TestFailureOf(t *testing.T) {
	t.Parallel()
	boom := lb.TransientFailureError(errors.New("boom"))
	if err := failureOf(lb.NewErrPicker(boom)); err != boom {
		t.Errorf("failureOf(error picker) = %v, want %v", err, boom)
	}
	if err := failureOf(lb.NewQueuePicker()); err != errNoFailure {
		t.Errorf("failureOf(queue picker) = %v, want errNoFailure", err)
	}
	// A picker that does not say its error is never picked from.
	picked := 0
	picking := pickCounter{n: &picked}
	if err := failureOf(picking); err != errNoFailure || picked != 0 {
		t.Errorf("failureOf(picking picker) = %v after %d picks, want errNoFailure and no pick", err, picked)
	}
}

// pickCounter counts its picks, which succeed.
type pickCounter struct{ n *int }

func (p pickCounter) Pick(lb.PickInfo) (lb.PickResult, error) {
	*p.n++
	return lb.PickResult{}, nil
}

func TestCloseClosesEveryTarget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addrs := []resolver.Address{lbtest.PathAddr("10.0.0.1:80", "a"), lbtest.PathAddr("10.0.1.1:80", "b")}
	e.update(addrs, leafTarget("a", 1), leafTarget("b", 1))
	e.h.CloseBalancer()
	for _, sc := range e.h.CC.SubConns() {
		if !sc.IsShutdown() {
			t.Errorf("%v not shut down by Close", sc)
		}
	}
	n := e.published()
	e.h.ResolverError(errConn)
	e.h.ExitIdle()
	if err := e.h.UpdateAddresses(e.config(leafTarget("a", 1)), addrs...); err != nil {
		t.Errorf("update after Close: %v", err)
	}
	if got := e.published(); got != n {
		t.Errorf("calls after Close published %d states", got-n)
	}
	if got := len(e.h.CC.SubConns()); got != 2 {
		t.Errorf("calls after Close created SubConns: %d in all", got)
	}
}

func TestTargetReaddedIsNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	first := e.h.Script("a")
	e.update(nil, scriptTarget("b", 1))
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	if e.h.Script("a") == first || !first.Closed() {
		t.Fatalf("re-added target a reused its closed balancer")
	}
	e.h.Report("a", lb.Ready, "r")
	e.h.Report("b", lb.Ready, "r")
	checkPeriods(t, pickSeq(t, e.h.WantState(lb.Ready).Picker, e.names("a", "b"), 20), 2, map[string]int{"a": 1, "b": 1})
}

// A target that publishes the same state with the same picker again changes
// nothing: the policy publishes nothing, and a repeated TRANSIENT_FAILURE
// is not a newer failure (docs/choices.md, "Publishing").
func TestIdenticalTargetReportIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	for _, state := range []lb.ConnectivityState{lb.Ready, lb.TransientFailure} {
		a := e.h.Script("a")
		var p lb.Picker
		e.h.Do(func() { p = a.Report(state, "a-"+state.String()) })
		e.h.Report("b", state, "b-"+state.String())
		again := lb.State{ConnectivityState: state, Picker: p}
		n := e.published()
		e.h.Do(func() { a.ClientConn().UpdateState(again) })
		if got := e.published(); got != n {
			t.Fatalf("%v: the same report again published %d more states, want none", state, got-n)
		}
	}
}
