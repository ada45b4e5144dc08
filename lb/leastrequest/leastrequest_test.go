package leastrequest_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newHarness builds the policy with cfg on a new harness and sends as.
func newHarness(t *testing.T, cfg lb.Config, as ...resolver.Address) *lbtest.Harness {
	t.Helper()
	h := lbtest.New(t)
	h.Build(leastrequest.Builder{})
	if err := h.UpdateAddresses(cfg, as...); err != nil {
		t.Fatal(err)
	}
	return h
}

// pick picks once on the last picker, which must succeed.
func pick(t *testing.T, h *lbtest.Harness) lb.PickResult {
	t.Helper()
	r, err := h.State().Picker.Pick(lb.PickInfo{Ctx: context.Background()})
	if err != nil || r.SubConn == nil || r.Done == nil {
		t.Fatalf("Pick = %+v, %v; want a SubConn and a Done", r, err)
	}
	return r
}

// TestAggregateState pins A48's aggregation rules: READY if any SubConn is
// READY; else CONNECTING if any is CONNECTING or IDLE; else
// TRANSIENT_FAILURE, a SubConn that failed counting as failed until READY.
// A SubConn that fails or loses its connection asks for re-resolution and
// is reconnected.
func TestAggregateState(t *testing.T) {
	h := newHarness(t, nil, lbtest.Addrs(2)...)
	h.WantEvents("NewSubConn(SubConn(0: [a]))", "Connect(SubConn(0: [a]))",
		"NewSubConn(SubConn(1: [b]))", "Connect(SubConn(1: [b]))", "UpdateState(CONNECTING)")
	errRefused := errors.New("refused")
	h.SubConn(0).Fail(errRefused)
	h.WantEvents("ResolveNow") // b is still connecting
	h.SubConn(1).Idle()
	h.WantEvents("Connect(SubConn(1: [b]))") // IDLE counts as CONNECTING
	h.SubConn(1).Fail(errRefused)
	h.WantEvents("ResolveNow", "UpdateState(TRANSIENT_FAILURE)")
	h.SubConn(0).Idle()
	h.SubConn(0).Connecting()
	h.SubConn(1).Idle()
	h.SubConn(1).Connecting()
	h.WantEvents("Connect(SubConn(0: [a]))", "Connect(SubConn(1: [b]))") // sticky while bouncing
	h.SubConn(1).Ready()
	h.WantEvents("UpdateState(READY)")
	h.SubConn(1).Idle()
	h.WantEvents("Connect(SubConn(1: [b]))", "ResolveNow", "UpdateState(CONNECTING)")
}

// TestCountersSurvivePickerRebuild: requests picked from one picker are
// still counted by the next, and Done, called after the rebuild, counts
// them down; the endpoint with requests in flight is avoided.
func TestCountersSurvivePickerRebuild(t *testing.T) {
	h := newHarness(t, leastrequest.Config{ChoiceCount: 10}, lbtest.Addrs(2)...)
	h.SubConn(0).Ready()
	var held []lb.PickResult
	for range 3 {
		held = append(held, pick(t, h)) // only a is READY
	}
	h.SubConn(1).Ready() // a new picker over a and b
	for range 20 {
		// With 10 samples over 2 endpoints, b is sampled unless every
		// sample is a: probability 2^-10 per pick. b has fewer requests.
		r := pick(t, h)
		if r.SubConn != h.SubConn(1) {
			t.Fatalf("picked %v with 3 requests in flight on it", r.SubConn)
		}
		r.Done(lb.DoneInfo{})
	}
	for _, r := range held {
		r.Done(lb.DoneInfo{Err: errors.New("failed")}) // counted down whatever the outcome
	}
	counts, err := lbtest.CountPicks(h.State().Picker, 200)
	if err != nil || counts[h.SubConn(0)] == 0 || counts[h.SubConn(1)] == 0 {
		t.Fatalf("picks after every Done: %v, %v; want both endpoints", counts, err)
	}
}

// TestSlowEndpointGetsFewer: an endpoint whose requests stay in flight (a
// slow backend) gets far fewer new requests than fast ones.
func TestSlowEndpointGetsFewer(t *testing.T) {
	h := newHarness(t, nil, lbtest.Addrs(4)...)
	for i := range 4 {
		h.SubConn(i).Ready()
	}
	counts := map[lb.SubConn]int{}
	for range 4000 {
		r := pick(t, h)
		counts[r.SubConn]++
		if r.SubConn != h.SubConn(0) { // a never finishes; the others at once
			r.Done(lb.DoneInfo{})
		}
	}
	// The slow endpoint is chosen only when every sample is it, since
	// sampling is with replacement (A48, "Allow picking same candidate
	// multiple times"): with 2 choices of 4, 1/16 of the picks, 250 of
	// 4000 (sd 15); each fast endpoint gets about 1250.
	if slow := counts[h.SubConn(0)]; slow < 170 || slow > 330 {
		t.Fatalf("picks %v: the slow endpoint got %d of 4000, want about 250", counts, slow)
	}
}

// TestDuplicatesAndWeights: duplicate addresses make one SubConn and add no
// weight; weights are ignored.
func TestDuplicatesAndWeights(t *testing.T) {
	a := resolver.Address{Addr: "a"}
	h := newHarness(t, nil, a, weight.Set(a, 50), a, weight.Set(resolver.Address{Addr: "b"}, 1))
	if n := len(h.CC.SubConns()); n != 2 {
		t.Fatalf("%d SubConns, want 2", n)
	}
	h.SubConn(0).Ready()
	h.SubConn(1).Ready()
	counts, err := lbtest.CountPicks(h.State().Picker, 4000) // each finishes at once
	if err != nil || counts[h.SubConn(0)] < 1900 || counts[h.SubConn(0)] > 2100 {
		t.Fatalf("picks %v, %v: want an even split", counts, err)
	}
}

// TestEmptyUpdate: an empty address list is TRANSIENT_FAILURE and
// ErrBadResolverState.
func TestEmptyUpdate(t *testing.T) {
	h := newHarness(t, nil, lbtest.Addrs(1)...)
	if err := h.UpdateAddresses(nil); !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("empty update = %v", err)
	}
	if s := h.State(); s.ConnectivityState != lb.TransientFailure {
		t.Fatalf("state %v, want TRANSIENT_FAILURE", s.ConnectivityState)
	}
}

// TestDoneTwiceNeverCountsBelowZero: a Done called twice (a caller's bug)
// does not leave the endpoint's count at -1, where it looked lighter than
// an idle endpoint for good: the count never goes below zero, so an
// endpoint with a request in flight is still avoided (issue 28).
func TestDoneTwiceNeverCountsBelowZero(t *testing.T) {
	h := newHarness(t, leastrequest.Config{ChoiceCount: 10}, lbtest.Addrs(2)...)
	h.SubConn(0).Ready() // only a is READY
	r := pick(t, h)
	r.Done(lb.DoneInfo{})
	r.Done(lb.DoneInfo{})
	held := pick(t, h) // a: one request in flight
	h.SubConn(1).Ready()
	for range 20 {
		// b is sampled unless all 10 samples are a (2^-10 per pick).
		r := pick(t, h)
		if r.SubConn != h.SubConn(1) {
			t.Fatalf("picked a, with a request in flight, over idle b: a's count went below zero")
		}
		r.Done(lb.DoneInfo{})
	}
	held.Done(lb.DoneInfo{})
}
