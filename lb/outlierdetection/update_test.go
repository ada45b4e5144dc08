package outlierdetection

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

func (e *env) nextSweep() (time.Duration, bool) {
	next, ok := e.h.Serializer.NextDeadline()
	return next.Sub(time.Unix(0, 0)), ok
}

func (e *env) wantNextSweep(want time.Duration) {
	e.t.Helper()
	if got, ok := e.nextSweep(); !ok || got != want {
		e.t.Fatalf("next sweep at +%v (pending %v), want +%v", got, ok, want)
	}
}

func TestConfigUpdateKeepsTheIntervalStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.wantNextSweep(10 * time.Second)
	e.h.Advance(3 * time.Second)
	// A new interval of 5s counts from the running interval's start (+0s).
	e.update(fpConfig("5s", "30s", "300s", 10), five...)
	e.wantNextSweep(5 * time.Second)
	e.calls("a", 10, 10)
	e.h.Advance(2*time.Second - 1)
	e.wantEjected("")
	e.h.Advance(1)
	e.wantEjected("a")
	e.wantNextSweep(10 * time.Second)
}

func TestConfigUpdateWithElapsedIntervalSweepsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.calls("a", 10, 10)
	e.h.Advance(7 * time.Second)
	e.update(fpConfig("5s", "30s", "300s", 10), five...) // 5s - 7s < 0: now
	e.wantEjected("a")
	e.wantNextSweep(12 * time.Second)
}

func TestEnablingStartsAFullIntervalAndResetsCounters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.calls("a", 10, 10) // counted, then reset when detection restarts
	e.h.Advance(4 * time.Second)
	e.update(`{"childPolicy": [{"test_addr_picker": {}}]}`, five...)
	if _, ok := e.nextSweep(); ok {
		t.Fatal("a sweep is pending with no algorithm configured")
	}
	e.h.Advance(time.Second)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.wantNextSweep(15 * time.Second)
	e.h.Advance(10 * time.Second)
	e.wantEjected("") // the failures before re-enabling were reset
}

func TestNoCountingWithoutAnAlgorithm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(`{"childPolicy": [{"test_addr_picker": {}}]}`, five...)
	r, err := e.h.State().Picker.Pick(lb.PickInfo{Ctx: withAddr("a")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Done != nil {
		t.Fatal("the picker counts calls with no algorithm configured")
	}
	// Switching an algorithm on republishes a counting picker.
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	if r, _ := e.h.State().Picker.Pick(lb.PickInfo{Ctx: withAddr("a")}); r.Done == nil {
		t.Fatal("no counting with the failure-percentage algorithm configured")
	}
}

func TestRemovingBothAlgorithmsUnejectsEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 100), five...)
	e.calls("a", 10, 10)
	e.calls("b", 10, 10)
	e.h.Advance(10 * time.Second)
	e.wantEjected("a,b")
	e.update(`{"childPolicy": [{"test_addr_picker": {}}]}`, five...)
	e.wantEjected("")
	for _, a := range []string{"a", "b"} {
		if got := e.childSees(a); got != lb.Ready {
			t.Errorf("child sees %v for %s, want READY", got, a)
		}
		if m := e.multiplier(a); m != 0 {
			t.Errorf("multiplier of %s is %d, want 0", a, m)
		}
	}
}

func TestRemovedAddressForgetsItsEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.calls("a", 10, 10)
	e.h.Advance(10 * time.Second)
	e.wantEjected("a")
	e.update(fpConfig("10s", "30s", "300s", 10), "b", "c", "d", "e")
	e.wantEjected("")
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.wantEjected("") // a fresh entry: not ejected, multiplier 0
	if m := e.multiplier("a"); m != 0 {
		t.Fatalf("multiplier %d after re-adding a, want 0", m)
	}
	if got := e.childSees("a"); got != lb.Ready {
		t.Fatalf("child sees %v for the re-added a, want READY", got)
	}
}

func TestSubConnCreatedForAnEjectedAddressStartsEjected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := `{"failurePercentageEjection": {"minimumHosts": 1, "requestVolume": 10}, "childPolicy": [{"test_leaf": {}}]}`
	e.update(cfg, "a", "b")
	var ejected *entry
	e.h.Do(func() {
		ejected = e.b().entries["a"]
		ejected.ejected, ejected.ejectedAt, ejected.multiplier = true, e.h.Clock.Now(), 1
	})
	// The child is replaced: its new SubConn for a is created while a is
	// ejected.
	e.update(`{"failurePercentageEjection": {"minimumHosts": 1, "requestVolume": 10}, "childPolicy": [{"test_addr_picker": {}}]}`, "a", "b")
	if got := e.childSees("a"); got != lb.TransientFailure {
		t.Fatalf("child sees %v for the new SubConn of ejected a, want TRANSIENT_FAILURE", got)
	}
	if got := e.childSees("b"); got != lb.Ready {
		t.Fatalf("child sees %v for b, want READY", got)
	}
	e.h.Do(func() { e.b().uneject(ejected) })
	if got := e.childSees("a"); got != lb.Ready {
		t.Fatalf("child sees %v for a after un-ejection, want READY (its real state)", got)
	}
}

func TestEjectedSubConnHidesItsStatesUntilUnejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	e.calls("a", 10, 10)
	e.h.Advance(10 * time.Second)
	sc := e.h.SubConn(0)
	sc.Idle()
	sc.Connecting()
	if got := e.childSees("a"); got != lb.TransientFailure {
		t.Fatalf("child sees %v for ejected a, want TRANSIENT_FAILURE", got)
	}
	e.h.Advance(30 * time.Second)
	if got := e.childSees("a"); got != lb.Connecting {
		t.Fatalf("child sees %v after un-ejection, want CONNECTING (the latest real state)", got)
	}
}

func TestPickerChainsTheChildsDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	var childDone []lb.DoneInfo
	p := &picker{counting: true, child: pickerFunc(func(info lb.PickInfo) (lb.PickResult, error) {
		r, err := e.h.State().Picker.(*picker).child.Pick(info)
		r.Done = func(di lb.DoneInfo) { childDone = append(childDone, di) }
		return r, err
	})}
	for range 10 {
		r, err := p.Pick(lb.PickInfo{Ctx: withAddr("a")})
		if err != nil {
			t.Fatal(err)
		}
		r.Done(lb.DoneInfo{Err: errCallFailed})
	}
	if len(childDone) != 10 {
		t.Fatalf("child's Done called %d times, want 10", len(childDone))
	}
	e.h.Advance(10 * time.Second)
	e.wantEjected("a")
}

type pickerFunc func(lb.PickInfo) (lb.PickResult, error)

func (f pickerFunc) Pick(info lb.PickInfo) (lb.PickResult, error) { return f(info) }

func TestCountingPickDoesNotAllocate(t *testing.T) {
	e := newEnv(t)
	e.update(`{"failurePercentageEjection": {}, "childPolicy": [{"test_leaf": {}}]}`, five...)
	p := e.h.State().Picker
	info := lb.PickInfo{Ctx: context.Background()}
	allocs := testing.AllocsPerRun(1000, func() {
		r, err := p.Pick(info)
		if err != nil || r.Done == nil {
			t.Fatalf("pick: %v, Done %v", err, r.Done != nil)
		}
		r.Done(lb.DoneInfo{})
	})
	if allocs != 0 {
		t.Fatalf("a counting pick and its Done allocate %v times, want 0", allocs)
	}
}

func TestSubConnWithSeveralAddressesIsIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 10), five...)
	var w *subConn
	e.h.Do(func() {
		sc, err := wrapCC{e.b()}.NewSubConn(lbtest.Addresses("a", "b"), lb.NewSubConnOptions{StateListener: func(lb.SubConnState) {}})
		if err != nil {
			t.Fatal(err)
		}
		w = sc.(*subConn)
	})
	var entry *entry
	var counter *callCounter
	e.h.Do(func() { entry, counter = w.entry, w.counter.Load() })
	if entry != nil || counter != nil {
		t.Fatalf("a SubConn with two addresses is in entry %v with counter %v, want neither", entry, counter)
	}
	// Its calls are not counted, and it is never ejected.
	for range 10 {
		w.record(lb.DoneInfo{Err: errCallFailed})
	}
	e.h.Advance(10 * time.Second)
	e.wantEjected("")
}

// A pick the channel discarded before sending (lb.ErrRequestNotSent) is no
// outcome: it is not counted as a failure, so it cannot eject a backend.
func TestUnsentPicksAreNotCounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.update(fpConfig("10s", "30s", "300s", 100), five...)
	for range 20 {
		r, err := e.h.State().Picker.Pick(lb.PickInfo{Ctx: withAddr("a")})
		if err != nil || r.Done == nil {
			t.Fatalf("pick: %v, Done %v", err, r.Done != nil)
		}
		r.Done(lb.DoneInfo{Err: fmt.Errorf("discarded: %w", lb.ErrRequestNotSent)})
	}
	e.h.Advance(10 * time.Second)
	e.wantEjected("")
}
