package weightedtarget

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

var errConn = errors.New("connection refused")

func TestWeightsOneToThree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 3))
	e.h.Report("a", lb.Ready, "r")
	e.h.Report("b", lb.Ready, "r")
	p := e.h.WantState(lb.Ready).Picker
	names := e.names("a", "b")

	seq := pickSeq(t, p, names, 4)
	if got := counts(seq); got["a"] != 1 || got["b"] != 3 {
		t.Fatalf("4 picks: %v, want a:1 b:3", seq)
	}
	seq = append(seq, pickSeq(t, p, names, 3996)...)
	if got := counts(seq); got["a"] != 1000 || got["b"] != 3000 {
		t.Fatalf("4000 picks: %v, want a:1000 b:3000", got)
	}
	checkPeriods(t, seq, 4, map[string]int{"a": 1, "b": 3})
}

func TestTargetInTransientFailureIsNotPicked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 2), scriptTarget("c", 3))
	for _, id := range []string{"a", "b", "c"} {
		e.h.Report(id, lb.Ready, "r")
	}
	names := e.names("a", "b", "c")
	checkPeriods(t, pickSeq(t, e.h.State().Picker, names, 60), 6, map[string]int{"a": 1, "b": 2, "c": 3})

	e.h.Report("b", lb.TransientFailure, "down")
	seq := pickSeq(t, e.h.WantState(lb.Ready).Picker, names, 400)
	checkPeriods(t, seq, 4, map[string]int{"a": 1, "c": 3})

	e.h.Report("b", lb.Ready, "up")
	checkPeriods(t, pickSeq(t, e.h.WantState(lb.Ready).Picker, names, 60), 6, map[string]int{"a": 1, "b": 2, "c": 3})
}

func TestAllConnectingQueues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	// New targets start CONNECTING: the update publishes CONNECTING.
	if err := pickErr(e.h.WantState(lb.Connecting).Picker); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Fatalf("CONNECTING pick error = %v, want ErrNoSubConnAvailable", err)
	}
	e.h.Report("a", lb.TransientFailure, "down")
	e.h.Report("b", lb.Connecting, "c")
	if err := pickErr(e.h.WantState(lb.Connecting).Picker); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Fatalf("CONNECTING pick error = %v, want ErrNoSubConnAvailable", err)
	}
}

func TestAllTransientFailureFailsWithAnError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	e.h.Report("a", lb.TransientFailure, "refused")
	e.h.WantState(lb.Connecting)
	e.h.Report("b", lb.TransientFailure, "timeout")
	err := pickErr(e.h.WantState(lb.TransientFailure).Picker)
	if !errors.Is(err, lb.ErrTransientFailure) || lb.ClassifyPickError(err) != lb.PickFailUnlessWaitForReady {
		t.Fatalf("pick error %v is not a transient failure", err)
	}
	for _, want := range []string{`target "b"`, "b: timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("pick error %q does not contain %q", err, want)
		}
	}
	// A newer failure of a becomes the reported one.
	e.h.Report("a", lb.TransientFailure, "reset")
	if err := pickErr(e.h.WantState(lb.TransientFailure).Picker); !strings.Contains(err.Error(), "a: reset") {
		t.Errorf("pick error %q does not name a's newer failure", err)
	}
}

func TestStickyTransientFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	e.h.Report("a", lb.TransientFailure, "a-down")
	e.h.Report("b", lb.TransientFailure, "b-down")
	e.h.WantState(lb.TransientFailure)
	n := e.published()

	// a retries: CONNECTING, but it still counts as failed.
	e.h.Report("a", lb.Connecting, "retry")
	e.h.Report("a", lb.Idle, "idle")
	if got := e.published(); got != n {
		t.Fatalf("a sticky-failed target's reports published %d states, want none", got-n)
	}
	if err := pickErr(e.h.WantState(lb.TransientFailure).Picker); !strings.Contains(err.Error(), "b: b-down") {
		t.Errorf("pick error %q, want b's error", err)
	}
	// READY ends the stickiness; a later CONNECTING counts as such.
	e.h.Report("a", lb.Ready, "up")
	e.h.WantState(lb.Ready)
	e.h.Report("a", lb.Connecting, "lost")
	e.h.WantState(lb.Connecting)

	// A target that was never READY: TRANSIENT_FAILURE then CONNECTING
	// keeps the aggregate in TRANSIENT_FAILURE too.
	e.h.Report("a", lb.TransientFailure, "again")
	e.h.WantState(lb.TransientFailure)
}

func TestNoTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil)
	err := pickErr(e.h.WantState(lb.TransientFailure).Picker)
	if !errors.Is(err, lb.ErrTransientFailure) || !errors.Is(err, ErrNoTargets) {
		t.Fatalf("pick error %v, want ErrNoTargets as a transient failure", err)
	}
	// From targets to none: every target is closed.
	e.update(nil, scriptTarget("a", 1))
	e.h.Report("a", lb.Ready, "r")
	e.update(nil)
	e.h.WantState(lb.TransientFailure)
	if !e.h.Script("a").Closed() || len(e.childNames()) != 0 {
		t.Fatalf("target a not closed when the config dropped it")
	}
}

func TestRemovedTargetIsClosedAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addrs := []resolver.Address{lbtest.PathAddr("10.0.0.1:80", "a"), lbtest.PathAddr("10.0.0.2:80", "a"), lbtest.PathAddr("10.0.1.1:80", "b")}
	e.update(addrs, leafTarget("a", 1), leafTarget("b", 1))
	for _, sc := range e.h.CC.SubConns() {
		sc.Ready()
	}
	e.update(addrs, leafTarget("b", 1))
	for _, addr := range []string{"10.0.0.1:80", "10.0.0.2:80"} {
		if !e.h.SubConnFor(addr).IsShutdown() {
			t.Errorf("%s of removed target a not shut down", addr)
		}
	}
	if e.h.SubConnFor("10.0.1.1:80").IsShutdown() {
		t.Errorf("b's SubConn shut down")
	}
	if _, ok := e.h.Serializer.NextDeadline(); ok {
		t.Errorf("a timer is pending: removal must not be deferred")
	}
	b := e.h.SubConnFor("10.0.1.1:80")
	if got, err := countSubConns(e.h.WantState(lb.Ready).Picker, 10); err != nil || got[b] != 10 {
		t.Fatalf("picks %v, %v; want all 10 on b", got, err)
	}
}

func TestWeightChangeAppliesAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	e.h.Report("a", lb.Ready, "r")
	e.h.Report("b", lb.Ready, "r")
	names := e.names("a", "b")
	checkPeriods(t, pickSeq(t, e.h.State().Picker, names, 20), 2, map[string]int{"a": 1, "b": 1})

	e.update(nil, scriptTarget("a", 4), scriptTarget("b", 1))
	seq := pickSeq(t, e.h.WantState(lb.Ready).Picker, names, 500)
	checkPeriods(t, seq, 5, map[string]int{"a": 4, "b": 1})
	if len(e.h.Script("a").Updates()) != 2 || e.h.Script("a").Closed() {
		t.Errorf("a weight change recreated the target")
	}
}

func TestChildPolicyChangeReplacesChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addrs := []resolver.Address{lbtest.PathAddr("10.0.0.1:80", "a")}
	e.update(addrs, leafTarget("a", 1), scriptTarget("b", 1))
	old := e.h.SubConnFor("10.0.0.1:80")
	old.Fail(errConn)
	e.h.Report("b", lb.TransientFailure, "down")
	e.h.WantState(lb.TransientFailure)

	e.update(addrs, scriptTarget("a", 1), scriptTarget("b", 1))
	if !old.IsShutdown() {
		t.Fatalf("old policy's SubConn not shut down")
	}
	var policy string
	e.h.Do(func() { policy = e.b().children.Get("a").Policy() })
	if policy != lbtest.ScriptName || e.h.Scripts.Get("a") == nil {
		t.Fatalf("target a runs %q, want %q", policy, lbtest.ScriptName)
	}
	// The new policy has not failed: a counts as CONNECTING again.
	e.h.WantState(lb.Connecting)
	e.h.Report("a", lb.Ready, "r")
	if got := pickSeq(t, e.h.WantState(lb.Ready).Picker, e.names("a"), 3); !slices.Equal(got, []string{"a", "a", "a"}) {
		t.Fatalf("picks %v, want a's new policy", got)
	}
}

func TestInlineUpdateStateDoesNotPublishMidUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, inlineTarget("a", 1, lb.Ready), inlineTarget("b", 3, lb.Ready), inlineTarget("c", 1, lb.TransientFailure))
	states := e.h.CC.States.Drain()
	if len(states) != 1 || states[0].ConnectivityState != lb.Ready {
		t.Fatalf("first update published %d states %v, want exactly one READY", len(states), states)
	}
	checkPeriods(t, pickSeq(t, states[0].Picker, e.names("a", "b"), 40), 4, map[string]int{"a": 1, "b": 3})

	// Every child publishes inline again; a goes down: still one publish.
	e.update(nil, inlineTarget("a", 1, lb.TransientFailure), inlineTarget("b", 3, lb.Ready), inlineTarget("c", 1, lb.Ready))
	states = e.h.CC.States.Drain()
	if len(states) != 1 || states[0].ConnectivityState != lb.Ready {
		t.Fatalf("second update published %d states, want exactly one READY", len(states))
	}
	checkPeriods(t, pickSeq(t, states[0].Picker, e.names("b", "c"), 40), 4, map[string]int{"b": 3, "c": 1})
}

func TestUpdateRepublishesUnchangedPicker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 2))
	e.h.Report("a", lb.Ready, "r")
	e.h.Report("b", lb.Ready, "r")
	n := e.published()
	// A child report that changes nothing visible publishes nothing.
	e.h.Report("a", lb.Connecting, "c")
	e.h.Report("a", lb.TransientFailure, "tf")
	e.h.Report("a", lb.Connecting, "c")
	e.h.Report("a", lb.Ready, "r2")
	e.h.Report("a", lb.TransientFailure, "tf")
	// Published: a leaves READY, rejoins, leaves again. Its sticky
	// CONNECTING and its TRANSIENT_FAILURE while b is READY change
	// nothing.
	if got := e.published(); got != n+3 {
		t.Fatalf("published %d states, want 3", got-n)
	}
	e.h.Report("a", lb.Ready, "r3")
	p := e.h.State().Picker
	n = e.published()
	// A parent update always publishes, the same picker when nothing
	// changed, so its schedule continues.
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 2))
	if got := e.published(); got != n+1 || e.h.State().Picker != p {
		t.Fatalf("update published %d states (same picker %v), want 1, the same", got-n, e.h.State().Picker == p)
	}
}

func TestCarryOverDoesNotStarveLightTarget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("light", 1), scriptTarget("heavy", 9))
	e.h.Report("light", lb.Ready, "r")
	e.h.Report("heavy", lb.Ready, "r")
	names := e.names("light", "heavy")
	// heavy republishes after every pick: a new picker each time. A
	// schedule restarted each time would always pick heavy first.
	var seq []string
	for i := range 100 {
		seq = append(seq, pickSeq(t, e.h.State().Picker, names, 1)...)
		e.h.Report("heavy", lb.Ready, "r"+string(rune('a'+i%26)))
	}
	checkPeriods(t, seq, 10, map[string]int{"light": 1, "heavy": 9})
}

func TestSingleReadyTargetPublishesItsOwnPicker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(nil, scriptTarget("a", 1), scriptTarget("b", 1))
	e.h.Report("a", lb.Ready, "only")
	if p, ok := e.h.WantState(lb.Ready).Picker.(*lbtest.ScriptPicker); !ok || p.Token != "only" {
		t.Fatalf("published %T, want a's own picker", e.h.State().Picker)
	}
}

func TestPickDoesNotAllocate(t *testing.T) {
	e := newEnv(t)
	addrs := []resolver.Address{lbtest.PathAddr("10.0.0.1:80", "a"), lbtest.PathAddr("10.0.1.1:80", "b"), lbtest.PathAddr("10.0.2.1:80", "c")}
	e.update(addrs, leafTarget("a", 1), leafTarget("b", 2), leafTarget("c", 3))
	for _, sc := range e.h.CC.SubConns() {
		sc.Ready()
	}
	p := e.h.WantState(lb.Ready).Picker
	if _, ok := p.(*weightedPicker); !ok {
		t.Fatalf("published %T, want *weightedPicker", p)
	}
	info := lb.PickInfo{Ctx: t.Context()}
	if allocs := testing.AllocsPerRun(1000, func() {
		if _, err := p.Pick(info); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Fatalf("Pick allocates %v times, want 0", allocs)
	}
}

// countSubConns counts n picks of p by SubConn.
func countSubConns(p lb.Picker, n int) (map[lb.SubConn]int, error) {
	info := lb.PickInfo{}
	out := make(map[lb.SubConn]int)
	for range n {
		r, err := p.Pick(info)
		if err != nil {
			return out, err
		}
		out[r.SubConn]++
	}
	return out, nil
}
