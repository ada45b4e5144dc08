package priority

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

func (e *env) current() string {
	var name string
	e.h.Do(func() {
		if c := e.b().current; c != nil {
			name = c.Name()
		}
	})
	return name
}

func TestChildMovedToAnotherPriorityIsNotRecreated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addrs := []resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0"), lbtest.PathAddr("10.0.1.1:80", "p1"), lbtest.PathAddr("10.0.2.1:80", "p2")}
	e.update(addrs, leafChild("p0"), leafChild("p1"))
	e.h.SubConnFor("10.0.0.1:80").Fail(errConn)
	sc1 := e.h.SubConnFor("10.0.1.1:80")
	sc1.Ready()
	old := e.child("p1")

	// p1 moves up to priority 0; p0 is gone, p2 is new below p1.
	e.update(addrs, leafChild("p1"), leafChild("p2"))
	if e.child("p1") != old || sc1.IsShutdown() || len(e.h.CC.SubConns()) != 2 {
		t.Fatalf("p1 was recreated (SubConns %d, old shut down %v)", len(e.h.CC.SubConns()), sc1.IsShutdown())
	}
	if got := pick(t, e.h.State().Picker); got != sc1 {
		t.Fatalf("picked %v, want p1's %v", got, sc1)
	}
	if got := e.childNames(); !slices.Equal(got, []string{"p0(inactive)", "p1"}) {
		t.Fatalf("children = %v, want [p0(inactive) p1] (p2 not created)", got)
	}
	// Reordered back below a new p0' that fails: still the same p1.
	e.update(addrs, leafChild("p2"), leafChild("p1"))
	e.h.SubConnFor("10.0.2.1:80").Fail(errConn)
	if e.child("p1") != old || e.current() != "p1" {
		t.Fatalf("after reordering, current %q, same child %v", e.current(), e.child("p1") == old)
	}
}

// removeAndReadd runs the shared start of the removal tests: p1 is in use,
// then p0 READY deactivates it at time T0, then 5 min later the config drops
// p1, then 5 min later it is re-added with a new address.
func removeAndReadd(t *testing.T, e *env) (sc0, sc1 *lbtest.SubConn) {
	t.Helper()
	twoLeaves(e)
	sc0 = e.h.SubConnFor("10.0.0.1:80")
	sc0.Fail(errConn)
	sc1 = e.h.SubConnFor("10.0.1.1:80")
	sc1.Ready()
	sc0.Ready()
	e.h.Advance(5 * time.Minute)
	e.update([]resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0")}, leafChild("p0"))
	return sc0, sc1
}

func TestRemovedChildIsDeactivatedThenReadded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sc0, sc1 := removeAndReadd(t, e)
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1(inactive)"}) || sc1.IsShutdown() {
		t.Fatalf("after removal: children %v, SubConn shut down %v; want p1 kept, inactive", got, sc1.IsShutdown())
	}
	e.h.Advance(5 * time.Minute)
	e.update([]resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0"), lbtest.PathAddr("10.0.1.2:80", "p1")}, leafChild("p0"), leafChild("p1"))
	// Re-added: p1 got its new addresses but stays deactivated.
	if !sc1.IsShutdown() {
		t.Fatalf("re-added p1 did not get its new addresses (old SubConn alive)")
	}
	sc1b := e.h.SubConnFor("10.0.1.2:80")
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1(inactive)"}) {
		t.Fatalf("after re-add: children %v, want p1 still inactive", got)
	}

	t.Run("destroyed by the first deactivation timer", func(t *testing.T) {
		e.h.Advance(5*time.Minute - time.Nanosecond)
		if e.child("p1") == nil {
			t.Fatalf("p1 destroyed early")
		}
		e.h.Advance(time.Nanosecond)
		if e.child("p1") != nil || !sc1b.IsShutdown() {
			t.Fatalf("p1 not destroyed 15 min after its deactivation")
		}
		// Chosen later, it is created anew.
		sc0.Fail(errConn)
		if e.child("p1") == nil || len(e.h.CC.SubConns()) != 4 {
			t.Fatalf("p1 not recreated when chosen (%d SubConns)", len(e.h.CC.SubConns()))
		}
	})
}

func TestRemovedChildIsReactivatedOnlyWhenChosen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sc0, _ := removeAndReadd(t, e)
	e.update([]resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0"), lbtest.PathAddr("10.0.1.2:80", "p1")}, leafChild("p0"), leafChild("p1"))
	sc1b := e.h.SubConnFor("10.0.1.2:80")
	sc1b.Ready()
	if e.current() != "p0" {
		t.Fatalf("current = %q, want p0", e.current())
	}
	sc0.Fail(errConn)
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1"}) || e.current() != "p1" {
		t.Fatalf("children %v, current %q; want p1 reactivated and current", got, e.current())
	}
	if got := pick(t, e.h.State().Picker); got != sc1b {
		t.Fatalf("picked %v, want %v", got, sc1b)
	}
	e.h.Advance(time.Hour)
	if sc1b.IsShutdown() {
		t.Fatalf("reactivated p1 was destroyed")
	}
}

func TestRemovedChildIsDestroyedAtOnceWithA115(t *testing.T) {
	t.Parallel()
	e := newEnv(t, WithRetainRemovedChildren(false))
	sc0, sc1 := removeAndReadd(t, e)
	if got := e.childNames(); !slices.Equal(got, []string{"p0"}) || !sc1.IsShutdown() {
		t.Fatalf("after removal: children %v, SubConn shut down %v; want p1 gone", got, sc1.IsShutdown())
	}
	e.update([]resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0"), lbtest.PathAddr("10.0.1.2:80", "p1")}, leafChild("p0"), leafChild("p1"))
	if got := e.childNames(); !slices.Equal(got, []string{"p0"}) {
		t.Fatalf("re-added p1 was created while p0 is READY: %v", got)
	}
	sc0.Fail(errConn)
	if e.child("p1") == nil || e.h.SubConnFor("10.0.1.2:80") == nil {
		t.Fatalf("p1 not created when chosen")
	}
	// Lower priorities still wait out the deactivation delay.
	sc0.Ready()
	e.h.Advance(retain - time.Nanosecond)
	if e.child("p1") == nil {
		t.Fatalf("deactivated lower priority destroyed before the delay")
	}
	e.h.Advance(time.Nanosecond)
	if e.child("p1") != nil {
		t.Fatalf("deactivated lower priority not destroyed after the delay")
	}
}

func TestEmptyPriorities(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.h.UpdateAddresses(e.h.ParseConfig(Name, `{}`)); err != nil {
		t.Fatalf("UpdateClientConnState: %v", err)
	}
	e.h.WantPicker(lb.TransientFailure, "<error: priority policy has empty priority list>")
	_, err := e.h.State().Picker.Pick(lb.PickInfo{})
	if !errors.Is(err, lb.ErrTransientFailure) || !errors.Is(err, ErrEmptyPriorities) {
		t.Errorf("empty-list picker error %v is not ErrEmptyPriorities as a transient failure", err)
	}
	// From a non-empty list to an empty one: children are deactivated.
	e.update(nil, scriptChild("p0"))
	e.h.Report("p0", lb.Ready, "ready")
	e.update(nil)
	e.h.WantPicker(lb.TransientFailure, "<error: priority policy has empty priority list>")
	if got := e.childNames(); !slices.Equal(got, []string{"p0(inactive)"}) {
		t.Fatalf("children = %v, want [p0(inactive)]", got)
	}
	n := len(e.h.CC.States.All())
	e.h.Report("p0", lb.Connecting, "connecting") // a removed child's report changes nothing
	e.h.ExitIdle()
	if got := len(e.h.CC.States.All()); got != n || e.h.Scripts.Get("p0").ExitIdles() != 0 {
		t.Fatalf("published %d more states, ExitIdle reached p0 %d times; want 0, 0", got-n, e.h.Scripts.Get("p0").ExitIdles())
	}
}

func TestIgnoreReresolutionRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p0 := scriptChild("p0")
	p0.ignore = true
	p1 := scriptChild("p1")
	e.update(nil, p0, p1)
	e.h.Report("p0", lb.TransientFailure, "tf")
	resolveNow := func(id string) int {
		before := e.h.CC.ResolveNows.Pending()
		e.h.Do(func() { e.h.Scripts.Get(id).ClientConn().ResolveNow() })
		return e.h.CC.ResolveNows.Pending() - before
	}
	if got := resolveNow("p0"); got != 0 {
		t.Errorf("p0 (ignoring) ResolveNow reached the parent %d times", got)
	}
	if got := resolveNow("p1"); got != 1 {
		t.Errorf("p1 ResolveNow reached the parent %d times, want 1", got)
	}
	// The flags flip with the next update, at once.
	p0.ignore, p1.ignore = false, true
	e.update(nil, p0, p1)
	if got := resolveNow("p0"); got != 1 {
		t.Errorf("after the update, p0 ResolveNow reached the parent %d times, want 1", got)
	}
	if got := resolveNow("p1"); got != 0 {
		t.Errorf("after the update, p1 (ignoring) ResolveNow reached the parent %d times", got)
	}
}

func TestInlineUpdateStateOnCreation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, inlineChild("p0", lb.Ready), scriptChild("p1"))
	if got := e.h.CC.States.Drain(); len(got) != 1 || lbtest.PickerToken(got[0].Picker) != "inline:p0" {
		t.Fatalf("published %v, want exactly p0's inline READY", got)
	}
	if _, ok := e.h.Serializer.NextDeadline(); ok {
		t.Fatalf("p0's failover timer survived its inline READY")
	}
	if got := e.childNames(); !slices.Equal(got, []string{"p0"}) {
		t.Fatalf("children = %v, want [p0]", got)
	}
}

func TestInlineUpdateStateDuringUpdateDoesNotChooseMidUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptChild("p0"), scriptChild("p1"))
	e.h.Report("p0", lb.TransientFailure, "p0-tf")
	e.h.Report("p1", lb.Ready, "p1-ready")
	e.h.Report("p0", lb.Ready, "p0-ready")
	e.h.WantPicker(lb.Ready, "p0-ready")
	e.h.CC.States.Drain()

	// p0 fails inline during the update, before p1 gets its (inline READY)
	// update. A choice run mid-update would publish p1's stale picker.
	e.update(nil, inlineChild("p0", lb.TransientFailure), inlineChild("p1", lb.Ready))
	got := e.h.CC.States.Drain()
	if len(got) != 1 || got[0].ConnectivityState != lb.Ready || lbtest.PickerToken(got[0].Picker) != "inline:p1" {
		var tokens []string
		for _, s := range got {
			tokens = append(tokens, s.ConnectivityState.String()+"/"+lbtest.PickerToken(s.Picker))
		}
		t.Fatalf("published %v during the update, want exactly [READY/inline:p1]", tokens)
	}
	if got := e.childNames(); !slices.Equal(got, []string{"p0", "p1"}) {
		t.Fatalf("children = %v, want p1 reactivated", got)
	}
}

func TestChildPolicyChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update([]resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0")}, leafChild("p0"))
	sc := e.h.SubConnFor("10.0.0.1:80")
	sc.Ready()
	e.h.WantPicker(lb.Ready, "<leaf>")

	e.update([]resolver.Address{lbtest.PathAddr("10.0.0.1:80", "p0")}, scriptChild("p0"))
	if !sc.IsShutdown() {
		t.Fatalf("old policy's SubConn not shut down")
	}
	if e.h.Scripts.Get("p0") == nil || e.child("p0").Policy() != lbtest.ScriptName {
		t.Fatalf("new policy not built")
	}
	// The new policy has published nothing: CONNECTING, and since p0 was
	// READY more recently than TRANSIENT_FAILURE, its failover timer runs.
	e.h.WantPicker(lb.Connecting, "<queue>")
	if !e.failoverPending("p0") {
		t.Errorf("no failover timer after the policy change")
	}
	e.h.Report("p0", lb.Ready, "script-ready")
	e.h.WantPicker(lb.Ready, "script-ready")
}

// A resolver error after an empty priority list says why the list is
// empty: picks fail with both ErrEmptyPriorities and the error.
func TestEmptyPrioritiesNameTheResolverReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptChild("p0"))
	e.h.Report("p0", lb.Ready, "ready")
	e.update(nil)
	why := errors.New("priority 0 has no locality with a load_balancing_weight")
	e.h.ResolverError(why)
	s := e.h.State()
	_, err := s.Picker.Pick(lb.PickInfo{})
	if s.ConnectivityState != lb.TransientFailure || !errors.Is(err, ErrEmptyPriorities) || !errors.Is(err, why) || !errors.Is(err, lb.ErrTransientFailure) {
		t.Fatalf("published %v with pick error %v, want TRANSIENT_FAILURE with ErrEmptyPriorities and %v", s.ConnectivityState, err, why)
	}
}

func TestResolverError(t *testing.T) {
	t.Parallel()
	boom := errors.New("resolver exploded")
	t.Run("no children", func(t *testing.T) {
		e := newEnv(t)
		for _, want := range []error{boom, errConn} {
			e.h.ResolverError(want)
			s := e.h.State()
			_, err := s.Picker.Pick(lb.PickInfo{})
			if s.ConnectivityState != lb.TransientFailure || !errors.Is(err, want) || !errors.Is(err, lb.ErrTransientFailure) {
				t.Fatalf("published %v with pick error %v, want TRANSIENT_FAILURE with %v", s.ConnectivityState, err, want)
			}
		}
	})
	t.Run("every existing child", func(t *testing.T) {
		e := newEnv(t)
		e.update(nil, scriptChild("p0"), scriptChild("p1"), scriptChild("p2"))
		e.h.Report("p0", lb.TransientFailure, "p0-tf")
		e.h.Report("p1", lb.Ready, "p1-ready")
		n := len(e.h.CC.States.All())
		e.h.ResolverError(boom)
		for _, id := range []string{"p0", "p1"} {
			if errs := e.h.Scripts.Get(id).ResolverErrors(); len(errs) != 1 || !errors.Is(errs[0], boom) {
				t.Errorf("%s got resolver errors %v, want [%v]", id, errs, boom)
			}
		}
		if e.h.Scripts.Get("p2") != nil {
			t.Errorf("ResolverError created p2")
		}
		if got := len(e.h.CC.States.All()); got != n {
			t.Errorf("ResolverError published %d states though nothing changed", got-n)
		}
	})
}

func TestExitIdleReachesCurrentChildOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptChild("p0"), scriptChild("p1"))
	e.h.Report("p0", lb.TransientFailure, "p0-tf")
	e.h.Report("p1", lb.Idle, "p1-idle")
	e.h.ExitIdle()
	if p0, p1 := e.h.Scripts.Get("p0").ExitIdles(), e.h.Scripts.Get("p1").ExitIdles(); p0 != 0 || p1 != 1 {
		t.Fatalf("ExitIdle reached p0 %d and p1 %d times, want 0 and 1", p0, p1)
	}
}

func TestCloseStopsChildrenAndTimers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	twoLeaves(e)
	sc0 := e.h.SubConnFor("10.0.0.1:80")
	sc0.Fail(errConn) // p1 created, its failover timer pending
	sc0.Ready()       // p1 deactivated: its deactivation timer pending too
	if !e.failoverPending("p1") || e.child("p1").Active() {
		t.Fatalf("setup: want p1 inactive with a failover timer pending")
	}
	e.h.CloseBalancer()
	for _, sc := range e.h.CC.SubConns() {
		if !sc.IsShutdown() {
			t.Errorf("%v not shut down by Close", sc)
		}
	}
	if _, ok := e.h.Serializer.NextDeadline(); ok {
		t.Errorf("a timer is pending after Close")
	}
	n := len(e.h.CC.States.All())
	e.h.ResolverError(errConn)
	e.h.ExitIdle()
	_ = e.h.UpdateAddresses(e.config(leafChild("p0")))
	if got := len(e.h.CC.States.All()); got != n {
		t.Errorf("calls after Close published %d states", got-n)
	}
}

func TestChoiceIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptChild("p0"), scriptChild("p1"))
	e.h.Report("p0", lb.TransientFailure, "p0-tf")
	e.h.Report("p1", lb.Ready, "p1-ready")
	e.h.Report("p0", lb.Ready, "p0-ready")
	n := len(e.h.CC.States.All())
	e.h.Do(func() { e.b().choosePriority(false); e.b().choosePriority(false) })
	e.h.Report("p1", lb.TransientFailure, "p1-tf") // a deactivated child changes nothing
	if got := len(e.h.CC.States.All()); got != n {
		t.Fatalf("running the choice again published %d states", got-n)
	}
	// A parent update republishes the chosen child's picker.
	e.update(nil, scriptChild("p0"), scriptChild("p1"))
	if got := len(e.h.CC.States.All()); got != n+1 {
		t.Fatalf("a config update published %d states, want 1", got-n)
	}
	e.h.WantPicker(lb.Ready, "p0-ready")
}

func TestHierarchicalAddresses(t *testing.T) {
	t.Parallel()
	logs := &lbtest.Logs{}
	e := newEnvWith(t, []lbtest.Option{lbtest.WithLogger(slog.New(logs))})
	e.update([]resolver.Address{
		lbtest.PathAddr("10.0.0.1:80", "p0", "localityA"),
		lbtest.PathAddr("10.0.0.2:80", "p0"),
		lbtest.PathAddr("10.0.9.9:80", "stranger"),
		{Addr: "10.9.9.9:80"},
		lbtest.PathAddr("10.0.1.1:80", "p1", "localityB"),
	}, scriptChild("p0"), scriptChild("p1"))
	got := e.h.Scripts.Get("p0").Updates()[0].ResolverState.Addresses
	if len(got) != 2 {
		t.Fatalf("p0 got %v, want its 2 addresses", got)
	}
	if p, ok := hierarchy.Get(got[0]); !ok || !slices.Equal(p, []string{"localityA"}) {
		t.Errorf("p0's first address path = %v, %v; want [localityA]", p, ok)
	}
	if _, ok := hierarchy.Get(got[1]); ok || got[1].Addr != "10.0.0.2:80" {
		t.Errorf("p0's second address = %v, want 10.0.0.2:80 without a path", got[1])
	}
	if a := e.h.Scripts.Get("p0").Updates()[0].ResolverState.Attributes; a.Len() != 1 {
		t.Errorf("resolver attributes not passed to the child: %v", a)
	}
	out := logs.String()
	for _, want := range []string{"1 address(es) without a hierarchy path", "child_name=stranger"} {
		if !strings.Contains(out, want) {
			t.Errorf("log does not mention %q:\n%s", want, out)
		}
	}
	// p1, created later by failover, gets its addresses from that update.
	e.h.Report("p0", lb.TransientFailure, "tf")
	if got := e.h.Scripts.Get("p1").Updates()[0].ResolverState.Addresses; len(got) != 1 || got[0].Addr != "10.0.1.1:80" {
		t.Fatalf("p1 got %v, want 10.0.1.1:80", got)
	}
}

func TestChildUpdateErrorsAreReturned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// p1 has no address; it is created only when p0 fails.
	twoLeaves(e)
	e.h.SubConnFor("10.0.0.1:80").Fail(errConn)
	err := e.h.UpdateAddresses(e.config(leafChild("p0"), leafChild("p1")), lbtest.PathAddr("10.0.0.1:80", "p0"))
	if !errors.Is(err, lb.ErrBadResolverState) || !strings.Contains(err.Error(), `"p1"`) {
		t.Fatalf("UpdateClientConnState error = %v, want p1's ErrBadResolverState", err)
	}
	n := len(e.h.CC.States.All())
	for _, cfg := range []lb.Config{nil, (*Config)(nil), &Config{Priorities: []string{"x"}},
		&Config{Children: map[string]ChildConfig{"x": {}}, Priorities: []string{"x"}}} {
		if err := e.h.UpdateClientConnState(lb.ClientConnState{BalancerConfig: cfg}); err == nil {
			t.Errorf("config %#v was accepted", cfg)
		}
	}
	if got := len(e.h.CC.States.All()); got != n {
		t.Errorf("rejected configs published %d states", got-n)
	}
}

// A child that publishes the same state with the same picker again changes
// nothing: the policy publishes nothing (docs/choices.md, "Publishing").
func TestIdenticalChildReportIsNotPublishedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptChild("p0"))
	for _, state := range []lb.ConnectivityState{lb.Ready, lb.Connecting, lb.TransientFailure} {
		p := e.h.Report("p0", state, "r-"+state.String())
		n := len(e.h.CC.States.All())
		s := e.h.Scripts.Get("p0")
		e.h.Do(func() { s.ClientConn().UpdateState(lb.State{ConnectivityState: state, Picker: p}) })
		if got := len(e.h.CC.States.All()); got != n {
			t.Fatalf("%v: the same report again published %d more states, want none", state, got-n)
		}
	}
}
