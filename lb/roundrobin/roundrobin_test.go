package roundrobin_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/weight"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sequence makes n picks on p and returns the addresses picked.
func sequence(t *testing.T, p lb.Picker, n int) string {
	t.Helper()
	var s []byte
	for range n {
		r, err := p.Pick(lb.PickInfo{Ctx: context.Background()})
		if err != nil {
			t.Fatalf("pick: %v", err)
		}
		s = append(s, r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr...)
	}
	return string(s)
}

// readyAll builds round_robin on a harness seeded with seed, sends as, and
// makes every SubConn READY.
func readyAll(t *testing.T, seed uint64, as ...resolver.Address) *lbtest.Harness {
	t.Helper()
	h := lbtest.New(t, lbtest.WithSeed(seed))
	h.Build(roundrobin.Builder{})
	if err := h.UpdateAddresses(nil, as...); err != nil {
		t.Fatal(err)
	}
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	return h
}

// TestRotation: the READY picker hands out every READY SubConn in turn,
// in update order, from wherever it starts; weights change nothing.
func TestRotation(t *testing.T) {
	as := lbtest.Addrs(4)
	as[1] = weight.Set(as[1], 100)
	h := readyAll(t, 1, as...)
	got := sequence(t, h.State().Picker, 12)
	if got[:4] != got[4:8] || got[4:8] != got[8:] {
		t.Fatalf("sequence %q is not a rotation of period 4", got)
	}
	if !containsRotation("abcd", got[:4]) {
		t.Fatalf("sequence %q is not a rotation of abcd", got)
	}
}

// containsRotation reports whether s is a rotation of base.
func containsRotation(base, s string) bool {
	for i := range base {
		if base[i:]+base[:i] == s {
			return true
		}
	}
	return false
}

// TestRandomStart: each new picker starts at an index drawn with the tree's
// seeded random source: the same seed gives the same start, and over seeds
// every start occurs about equally often.
func TestRandomStart(t *testing.T) {
	counts := map[byte]int{}
	const seeds = 400
	for seed := range uint64(seeds) {
		h := readyAll(t, seed, lbtest.Addrs(4)...)
		first := sequence(t, h.State().Picker, 1)[0]
		counts[first]++
		if again := sequence(t, readyAll(t, seed, lbtest.Addrs(4)...).State().Picker, 1)[0]; again != first {
			t.Fatalf("seed %d: first pick %c, then %c with the same seed", seed, first, again)
		}
	}
	for _, c := range "abcd" {
		// Binomial(400, 1/4): mean 100, sd 8.7; 60..140 is beyond 4.5 sd.
		if n := counts[byte(c)]; n < 60 || n > 140 {
			t.Fatalf("first picks %v: %c picked %d times of %d, want about %d", counts, c, n, seeds, seeds/4)
		}
	}
}

// TestEveryPickerStartsAfresh: a rebuilt picker draws a new start.
func TestEveryPickerStartsAfresh(t *testing.T) {
	h := readyAll(t, 7, lbtest.Addrs(8)...)
	starts := map[byte]bool{}
	for range 20 {
		if err := h.UpdateAddresses(nil, lbtest.Addrs(8)...); err != nil {
			t.Fatal(err)
		}
		starts[sequence(t, h.State().Picker, 1)[0]] = true
	}
	if len(starts) < 3 {
		t.Fatalf("20 pickers started at only %d distinct endpoints", len(starts))
	}
}

// TestStatesAndReresolution: CONNECTING until a SubConn is READY; losing
// READY reconnects and asks for re-resolution; all failing is sticky
// TRANSIENT_FAILURE naming the last error.
func TestStatesAndReresolution(t *testing.T) {
	h := lbtest.New(t)
	h.Build(roundrobin.Builder{})
	if err := h.UpdateAddresses(nil, lbtest.Addrs(2)...); err != nil {
		t.Fatal(err)
	}
	h.WantEvents("NewSubConn(SubConn(0: [a]))", "Connect(SubConn(0: [a]))",
		"NewSubConn(SubConn(1: [b]))", "Connect(SubConn(1: [b]))", "UpdateState(CONNECTING)")
	h.SubConn(0).Ready()
	h.WantEvents("UpdateState(READY)")
	h.SubConn(0).Idle()
	h.WantEvents("Connect(SubConn(0: [a]))", "ResolveNow", "UpdateState(CONNECTING)")
	errRefused := errors.New("refused")
	h.SubConn(0).Fail(errRefused)
	h.SubConn(1).Fail(errRefused)
	h.WantEvents("ResolveNow", "ResolveNow", "UpdateState(TRANSIENT_FAILURE)")
	h.SubConn(0).Idle()
	h.SubConn(0).Connecting()
	h.WantEvents("Connect(SubConn(0: [a]))") // sticky: still TRANSIENT_FAILURE
	if _, err := h.State().Picker.Pick(lb.PickInfo{}); !errors.Is(err, errRefused) || !errors.Is(err, lb.ErrTransientFailure) {
		t.Fatalf("pick error %v, want a transient failure naming %v", err, errRefused)
	}
	if err := h.UpdateAddresses(nil); !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("empty update = %v, want ErrBadResolverState", err)
	}
}

// TestDuplicatesOneSubConn: duplicate addresses (also with different
// weights) make one SubConn and one slot in the rotation.
func TestDuplicatesOneSubConn(t *testing.T) {
	a := resolver.Address{Addr: "a"}
	h := readyAll(t, 1, a, weight.Set(a, 3), resolver.Address{Addr: "b"}, a)
	if n := len(h.CC.SubConns()); n != 2 {
		t.Fatalf("%d SubConns, want 2", n)
	}
	counts, err := lbtest.CountPicks(h.State().Picker, 10)
	if err != nil || len(counts) != 2 {
		t.Fatalf("picks %v, %v", counts, err)
	}
	for sc, n := range counts {
		if n != 5 {
			t.Fatalf("%v picked %d of 10, want 5", sc, n)
		}
	}
}

// TestConfigIgnored: round_robin takes no config; whatever object a
// service config gives it is accepted, as in grpc-go.
func TestConfigIgnored(t *testing.T) {
	p, err := lb.ParseLoadBalancingConfig([]byte(`[{"round_robin": {"unknown": [1, 2]}}]`))
	if err != nil || p.Name != roundrobin.Name {
		t.Fatalf("ParseLoadBalancingConfig = %+v, %v; want round_robin", p, err)
	}
}
