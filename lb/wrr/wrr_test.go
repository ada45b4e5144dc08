package wrr_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// TestWeightsPerPeriod: weights 1:2:3 give exactly 1:2:3 in every period.
func TestWeightsPerPeriod(t *testing.T) {
	e := newEnv(t, nil)
	e.mustUpdate(eps(1, 2, 3)...)
	e.h.WantEvents(newSC(0, "a"), connect(0, "a"), newSC(1, "b"), connect(1, "b"), newSC(2, "c"), connect(2, "c"),
		state(lb.Connecting))
	e.wantQueue()
	for i := range 3 {
		e.h.SubConn(i).Connecting()
		e.h.SubConn(i).Ready()
	}
	// CONNECTING reports change nothing a picker shows: no publication.
	e.h.WantEvents(state(lb.Ready), state(lb.Ready), state(lb.Ready))
	e.wantCounts(6, map[int]int{0: 1, 1: 2, 2: 3})
	e.wantCounts(6000, map[int]int{0: 1000, 1: 2000, 2: 3000})
	e.wantCounts(5, map[int]int{0: 1, 1: 2, 2: 2}) // the tail of a period
	e.wantCounts(1, map[int]int{2: 1})
}

// TestDeterministicStart: by default a new schedule starts as the
// specification says, every deadline at 1/weight: the heaviest endpoint
// first, ties in address order. Weights 1:2:3 give c(1/3) b(1/2) c(2/3),
// then a, b, c all at 1.
func TestDeterministicStart(t *testing.T) {
	for seed := range uint64(5) {
		e := newEnv(t, nil, lbtest.WithSeed(seed))
		e.readyAll(eps(1, 2, 3)...)
		if got := e.sequence(12); got != "cbcabccbcabc" {
			t.Fatalf("seed %d: sequence %q, want %q", seed, got, "cbcabccbcabc")
		}
	}
	// Equal weights: round robin in address order.
	e := newEnv(t, nil)
	e.readyAll(eps(4, 4, 4, 4)...)
	if got := e.sequence(8); got != "abcdabcd" {
		t.Fatalf("equal weights: sequence %q, want abcdabcd", got)
	}
}

// TestWeightOnlyUpdate: an update that changes only weights keeps every
// SubConn and publishes a new picker whose weights apply at once.
func TestWeightOnlyUpdate(t *testing.T) {
	e := newEnv(t, nil)
	e.readyAll(eps(1, 2, 3)...)
	e.h.CC.TakeEvents()
	e.picks(4) // stop in the middle of a period
	e.mustUpdate(eps(3, 2, 1)...)
	e.h.WantEvents(state(lb.Ready))
	e.wantCounts(6, map[int]int{0: 3, 1: 2, 2: 1})
	e.wantCounts(600, map[int]int{0: 300, 1: 200, 2: 100})
	// A weight taken away (back to the default 1) is a change too.
	e.mustUpdate(ep("a", noWeight), ep("b", 2), ep("c", 1))
	e.h.WantEvents(state(lb.Ready))
	e.wantCounts(4, map[int]int{0: 1, 1: 2, 2: 1})
	// The same update again still publishes a new picker (the
	// specification: every update creates one).
	e.mustUpdate(ep("a", noWeight), ep("b", 2), ep("c", 1))
	e.h.WantEvents(state(lb.Ready))
}

// TestSubConnLossReconnects: a READY SubConn that goes IDLE leaves the
// picker and is reconnected at once; it rejoins when READY.
func TestSubConnLossReconnects(t *testing.T) {
	e := newEnv(t, nil)
	e.readyAll(eps(1, 1, 1)...)
	e.h.CC.TakeEvents()
	e.h.SubConn(1).Idle()
	e.h.WantEvents(connect(1, "b"), state(lb.Ready))
	e.wantCounts(10, map[int]int{0: 5, 2: 5})
	e.h.SubConn(1).Connecting()
	e.h.WantEvents() // nothing a picker shows changed
	e.h.SubConn(1).Ready()
	e.h.WantEvents(state(lb.Ready))
	e.wantCounts(9, map[int]int{0: 3, 1: 3, 2: 3})

	// Losing every READY SubConn: CONNECTING while one is reconnecting.
	for i := range 3 {
		e.h.SubConn(i).Idle()
	}
	e.h.WantEvents(connect(0, "a"), state(lb.Ready), connect(1, "b"), state(lb.Ready), connect(2, "c"), state(lb.Connecting))
	e.wantQueue()
}

// TestAllFailing: when every SubConn has failed the policy reports
// TRANSIENT_FAILURE with the last connection error, and stays there
// (sticky) while the SubConns retry, until one is READY.
func TestAllFailing(t *testing.T) {
	e := newEnv(t, nil)
	e.mustUpdate(eps(1, 2)...)
	e.h.SubConn(0).Connecting()
	e.h.SubConn(1).Connecting()
	e.h.CC.TakeEvents()
	errA, errB := errors.New("a: connection refused"), errors.New("b: connection refused")
	e.h.SubConn(0).Fail(errA)
	e.h.WantEvents() // b is still connecting
	e.wantQueue()
	e.h.SubConn(1).Fail(errB)
	e.h.WantEvents(state(lb.TransientFailure))
	e.wantTF(errB)

	// Retries: IDLE after backoff is reconnected; IDLE and CONNECTING
	// after TRANSIENT_FAILURE still count as failed.
	e.h.SubConn(0).Idle()
	e.h.SubConn(0).Connecting()
	e.h.WantEvents(connect(0, "a"))
	errA2 := errors.New("a: timeout")
	e.h.SubConn(0).Fail(errA2)
	e.h.WantEvents(state(lb.TransientFailure)) // the error is refreshed
	e.wantTF(errA2)
	e.h.SubConn(1).Idle()
	e.h.SubConn(1).Connecting()
	e.h.WantEvents(connect(1, "b"))
	e.h.SubConn(1).Ready()
	e.h.WantEvents(state(lb.Ready))
	e.wantCounts(4, map[int]int{1: 4})
	// b is READY; a is still counted as failed: b losing its connection
	// makes the policy CONNECTING (b reconnects), not TRANSIENT_FAILURE.
	e.h.SubConn(1).Idle()
	e.h.WantEvents(connect(1, "b"), state(lb.Connecting))
}

// TestStickyAcrossUpdate: an endpoint that stays in an update keeps its
// state, sticky TRANSIENT_FAILURE included; a new endpoint counts as
// CONNECTING (it is asked to connect at once), so adding one to a failed
// policy reports CONNECTING, and removing it again reports
// TRANSIENT_FAILURE.
func TestStickyAcrossUpdate(t *testing.T) {
	e := newEnv(t, nil)
	e.mustUpdate(eps(1, 1)...)
	errA := errors.New("refused")
	e.h.SubConn(0).Fail(errA)
	e.h.SubConn(1).Fail(errA)
	e.h.SubConn(0).Idle()
	e.h.SubConn(0).Connecting()
	e.h.CC.TakeEvents()
	e.mustUpdate(ep("b", 1), ep("a", 2)) // reordered, a's weight changed
	e.h.WantEvents(state(lb.TransientFailure))
	e.wantTF(errA)
	e.mustUpdate(eps(1, 1, 1)...)
	e.h.WantEvents(newSC(2, "c"), connect(2, "c"), state(lb.Connecting))
	e.mustUpdate(eps(1, 1)...)
	e.h.WantEvents(shutdown(2, "c"), state(lb.TransientFailure))
	e.wantTF(errA)
}

// TestFailureNilError: a TRANSIENT_FAILURE report without an error still
// gives a picker error.
func TestFailureNilError(t *testing.T) {
	e := newEnv(t, nil)
	e.mustUpdate(eps(1)...)
	e.h.SubConn(0).Fail(nil)
	e.wantTF()
}

// TestEmptyList: an empty update shuts every SubConn down, reports
// TRANSIENT_FAILURE and returns ErrBadResolverState; the failure is not
// sticky.
func TestEmptyList(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.update(); !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("first update empty: %v, want ErrBadResolverState", err)
	}
	e.h.WantEvents(state(lb.TransientFailure))
	e.wantTF()

	e.readyAll(eps(1, 2)...)
	e.h.CC.TakeEvents()
	err := e.update()
	if !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("UpdateClientConnState(empty) = %v, want ErrBadResolverState", err)
	}
	e.h.WantEvents(shutdown(0, "a"), shutdown(1, "b"), state(lb.TransientFailure))
	e.wantTF()
	if msg := e.pickErr().Error(); !strings.Contains(msg, "zero addresses") {
		t.Fatalf("pick error %q does not mention zero addresses", msg)
	}
	e.mustUpdate(eps(1)...)
	e.h.WantEvents(newSC(2, "a"), connect(2, "a"), state(lb.Connecting))
}

// TestAddressUpdate: endpoints removed are shut down, new ones created and
// connected, the others kept with their state.
func TestAddressUpdate(t *testing.T) {
	e := newEnv(t, nil)
	e.readyAll(eps(1, 1, 1)...)
	e.h.CC.TakeEvents()
	e.mustUpdate(ep("c", 1), ep("d", 2), ep("a", 1))
	e.h.WantEvents(newSC(3, "d"), connect(3, "d"), shutdown(1, "b"), state(lb.Ready))
	e.wantCounts(4, map[int]int{0: 2, 2: 2})
	e.h.SubConn(3).Ready()
	e.h.WantEvents(state(lb.Ready))
	e.wantCounts(4, map[int]int{0: 1, 2: 1, 3: 2})
	// Reports from a SubConn the policy shut down are ignored.
	e.h.Do(func() {}) // the SHUTDOWN delivery has run
	e.h.WantEvents()
}

// TestMissingWeight: an address without a weight has weight 1.
func TestMissingWeight(t *testing.T) {
	e := newEnv(t, nil)
	e.readyAll(ep("a", noWeight), ep("b", 2), ep("c", noWeight))
	e.wantCounts(4, map[int]int{0: 1, 1: 2, 2: 1})
	e.wantCounts(400, map[int]int{0: 100, 1: 200, 2: 100})
}

// TestZeroWeight: a weight of 0 is treated as 1 and logged once per
// endpoint, however many updates carry it.
func TestZeroWeight(t *testing.T) {
	logs := &lbtest.Logs{}
	e := newEnv(t, nil, lbtest.WithLogger(slog.New(logs)))
	e.readyAll(ep("a", 0), ep("b", 2))
	e.wantCounts(3, map[int]int{0: 1, 1: 2})
	e.mustUpdate(ep("a", 0), ep("b", 2))
	e.mustUpdate(ep("a", 0), ep("b", 0))
	e.wantCounts(2, map[int]int{0: 1, 1: 1})
	e.mustUpdate(ep("a", 0), ep("b", 0))

	var lines []string
	for _, l := range logs.Lines() {
		if strings.Contains(l, "weight 0") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "addr=a") || !strings.Contains(lines[1], "addr=b") {
		t.Fatalf("weight-0 log lines: %q; want one for a, then one for b", lines)
	}
	if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "policy=weighted_round_robin") {
		t.Fatalf("log line %q: want level WARN and the policy name", lines[0])
	}
}

// TestDuplicateAddresses: one SubConn per endpoint. Addresses equal but for
// their weight are one endpoint (the first occurrence gives the weight);
// a different ServerName is a different endpoint.
func TestDuplicateAddresses(t *testing.T) {
	e := newEnv(t, nil)
	other := resolver.Address{Addr: "a", ServerName: "other"}
	e.mustUpdate(ep("a", 1), ep("b", 2), ep("a", 1), ep("a", 5), ep("b", noWeight), other)
	e.h.WantEvents(newSC(0, "a"), connect(0, "a"), newSC(1, "b"), connect(1, "b"), newSC(2, "a"), connect(2, "a"),
		state(lb.Connecting))
	if got := e.h.SubConn(2).Addresses()[0]; got != other {
		t.Fatalf("third SubConn for %v, want %v", got, other)
	}
	for i := range 3 {
		e.h.SubConn(i).Ready()
	}
	e.h.CC.TakeEvents()
	e.wantCounts(4, map[int]int{0: 1, 1: 2, 2: 1})
	// Moving the weight from the first to the second occurrence: the
	// first still wins. Reordering does not recreate anything.
	e.mustUpdate(other, ep("b", 2), ep("a", noWeight), ep("a", 3))
	e.h.WantEvents(state(lb.Ready))
	e.wantCounts(4, map[int]int{0: 1, 1: 2, 2: 1})
}

// TestResolverError: with no endpoint or in TRANSIENT_FAILURE a resolver
// error is reported; otherwise it is ignored.
func TestResolverError(t *testing.T) {
	e := newEnv(t, nil)
	errR := errors.New("dns: no such host")
	e.h.ResolverError(errR)
	e.h.WantEvents(state(lb.TransientFailure))
	e.wantTF(errR)

	e.mustUpdate(eps(1, 1)...)
	e.h.CC.TakeEvents()
	e.h.ResolverError(errors.New("ignored while connecting"))
	e.h.WantEvents()
	e.wantQueue()

	errC := errors.New("connection refused")
	e.h.SubConn(0).Fail(errC)
	e.h.SubConn(1).Fail(errC)
	e.h.WantEvents(state(lb.TransientFailure))
	errR2 := errors.New("dns: timeout")
	e.h.ResolverError(errR2)
	e.h.WantEvents(state(lb.TransientFailure))
	e.wantTF(errR2, errC)
	// Remembered until the next update: a new failure still names it.
	errC2 := errors.New("reset")
	e.h.SubConn(0).Fail(errC2)
	e.h.WantEvents(state(lb.TransientFailure))
	e.wantTF(errR2, errC2)

	e.h.SubConn(1).Ready()
	e.h.CC.TakeEvents()
	e.h.ResolverError(errors.New("ignored while READY"))
	e.h.WantEvents()
	e.wantCounts(2, map[int]int{1: 2})

	// After an empty update the resolver error is reported again.
	_ = e.update()
	e.h.CC.TakeEvents()
	errR3 := errors.New("dns: refused")
	e.h.ResolverError(errR3)
	e.h.WantEvents(state(lb.TransientFailure))
	e.wantTF(errR3)
}

// TestNewSubConnFailure: an endpoint whose SubConn cannot be created is
// skipped; with none created the policy is in TRANSIENT_FAILURE naming the
// error.
func TestNewSubConnFailure(t *testing.T) {
	e := newEnv(t, nil)
	errNS := errors.New("no more file descriptors")
	e.h.CC.FailNewSubConn(errNS)
	e.mustUpdate(eps(1, 2)...)
	e.h.WantEvents(state(lb.TransientFailure))
	e.wantTF(errNS)
	e.h.CC.FailNewSubConn(nil)
	e.mustUpdate(eps(1, 2)...)
	e.h.WantEvents(newSC(0, "a"), connect(0, "a"), newSC(1, "b"), connect(1, "b"), state(lb.Connecting))
}

// TestNoDuplicatePublish: SubConn reports that change nothing a picker
// shows publish nothing.
func TestNoDuplicatePublish(t *testing.T) {
	e := newEnv(t, nil)
	e.mustUpdate(eps(1, 1)...)
	e.h.SubConn(0).Ready()
	e.h.CC.TakeEvents()
	e.h.SubConn(1).Connecting()
	e.h.SubConn(1).Fail(errors.New("refused"))
	e.h.SubConn(1).Idle()
	e.h.SubConn(1).Connecting()
	e.h.SubConn(0).Ready() // a repeated report
	e.h.WantEvents(connect(1, "b"))
	e.wantCounts(3, map[int]int{0: 3})
}

// TestExitIdleDoesNothing: the policy is never IDLE.
func TestExitIdleDoesNothing(t *testing.T) {
	e := newEnv(t, nil)
	e.h.ExitIdle()
	e.mustUpdate(eps(1, 1)...)
	e.h.CC.TakeEvents()
	e.h.ExitIdle()
	e.h.SubConn(0).Idle() // before any other report: reconnected again
	e.h.WantEvents(connect(0, "a"))
	e.h.ExitIdle()
	e.h.WantEvents()
}

// TestClose: Close shuts every SubConn down; later calls do nothing.
func TestClose(t *testing.T) {
	e := newEnv(t, nil)
	e.readyAll(eps(1, 2, 3)...)
	e.h.CC.TakeEvents()
	p := e.h.State().Picker
	e.h.CloseBalancer()
	e.h.WantEvents(shutdown(0, "a"), shutdown(1, "b"), shutdown(2, "c"))
	if err := e.update(eps(1)...); err != nil {
		t.Fatalf("update after Close: %v", err)
	}
	if err := e.update(); err != nil {
		t.Fatalf("empty update after Close: %v", err)
	}
	e.h.ResolverError(errors.New("late"))
	e.h.ExitIdle()
	e.h.CloseBalancer()
	e.h.WantEvents()
	// A picker published before Close still answers (the channel stops
	// using it).
	if n := len(countPicks(t, p, 6)); n != 3 {
		t.Fatalf("old picker picked %d SubConns, want 3", n)
	}
}

// TestConcurrentPicks runs picks from several goroutines on whatever picker
// is current while the policy goes through updates and state changes; the
// race detector checks the picker's contract, and every pick returns a
// SubConn the policy created or a queue/failure error.
func TestConcurrentPicks(t *testing.T) {
	e := newEnv(t, nil)
	e.readyAll(eps(1, 2, 3, 4)...)
	created := make(map[lb.SubConn]bool)
	for _, sc := range e.h.CC.SubConns() {
		created[sc] = true
	}
	err := lbtest.PickConcurrently(e.h.CC, 4, func(r lb.PickResult) error {
		if !created[r.SubConn] {
			return errors.New("picked a SubConn the policy did not create")
		}
		return nil
	}, func() {
		for i := range 200 {
			e.mustUpdate(eps(1+i%3, 2, 3, 1+i%5)...)
			sc := e.h.SubConn(i % 4)
			sc.Idle()
			sc.Connecting()
			sc.Ready()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadyBurstCoalesces: SubConns that become READY in one burst (their
// reports queued back to back on the serializer, as when many connections
// complete while the tree is busy) cost one picker rebuild, not one each,
// and the one picker published includes all of them. Reports spaced out
// still get a picker each.
func TestReadyBurstCoalesces(t *testing.T) {
	e := newEnv(t, nil)
	e.mustUpdate(eps(1, 2, 3, 4)...)
	e.h.SubConn(0).Ready()
	e.h.CC.TakeEvents()
	for i := 1; i < 4; i++ {
		e.h.SubConn(i).QueueState(lb.SubConnState{ConnectivityState: lb.Ready})
	}
	e.h.Settle()
	e.h.WantEvents(state(lb.Ready)) // one picker for three changes
	e.wantCounts(10, map[int]int{0: 1, 1: 2, 2: 3, 3: 4})

	// A burst that takes endpoints out of the READY set: one picker again.
	e.h.SubConn(1).QueueState(lb.SubConnState{ConnectivityState: lb.Idle})
	e.h.SubConn(3).QueueState(lb.SubConnState{ConnectivityState: lb.Idle})
	e.h.Settle()
	e.h.WantEvents(connect(1, "b"), connect(3, "d"), state(lb.Ready))
	e.wantCounts(4, map[int]int{0: 1, 2: 3})

	// Spaced out, each change publishes at once.
	e.h.SubConn(1).Ready()
	e.h.WantEvents(state(lb.Ready))
	e.h.SubConn(3).Ready()
	e.h.WantEvents(state(lb.Ready))
	e.wantCounts(10, map[int]int{0: 1, 1: 2, 2: 3, 3: 4})
}

// TestBurstEndingInStateChange: when a burst also changes the aggregate
// state, that change publishes at once and the coalesced rebuild scheduled
// earlier in the burst publishes nothing more.
func TestBurstEndingInStateChange(t *testing.T) {
	e := newEnv(t, nil)
	e.readyAll(eps(1, 1)...)
	e.h.CC.TakeEvents()
	e.h.SubConn(0).QueueState(lb.SubConnState{ConnectivityState: lb.Idle})                                                     // READY set shrinks: rebuild scheduled
	e.h.SubConn(1).QueueState(lb.SubConnState{ConnectivityState: lb.TransientFailure, ConnectionError: errors.New("refused")}) // no READY left
	e.h.Settle()
	e.h.WantEvents(connect(0, "a"), state(lb.Connecting))
	e.wantQueue()
}
