package wrr_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
	"github.com/lbkit/lbkit/lb/wrr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noWeight marks an address without a weight attribute in ep.
const noWeight = -1

// ep returns the address name with weight w, or with no weight attribute
// when w is noWeight.
func ep(name string, w int) resolver.Address {
	a := resolver.Address{Addr: name}
	if w == noWeight {
		return a
	}
	return weight.Set(a, uint32(w))
}

// eps returns addresses named "a", "b", ... with the given weights.
func eps(weights ...int) []resolver.Address {
	out := make([]resolver.Address, len(weights))
	for i, w := range weights {
		out[i] = ep(string(rune('a'+i)), w)
	}
	return out
}

// env is a weighted_round_robin balancer on the lbtest harness, with a
// cursor into the recorded events so each step can assert exactly what it
// caused.
type env struct {
	t   lbtest.TB
	h   *lbtest.Harness
	cfg lb.Config
}

// newEnv builds the policy with cfg (nil for the default) on a new harness.
func newEnv(t lbtest.TB, cfg lb.Config, opts ...lbtest.Option) *env {
	t.Helper()
	h := lbtest.New(t, opts...)
	h.Build(wrr.Builder{})
	return &env{t: t, h: h, cfg: cfg}
}

// update sends addrs with the env's config and returns the error.
func (e *env) update(addrs ...resolver.Address) error {
	e.t.Helper()
	return e.h.UpdateAddresses(e.cfg, addrs...)
}

// mustUpdate is update that must succeed.
func (e *env) mustUpdate(addrs ...resolver.Address) {
	e.t.Helper()
	if err := e.update(addrs...); err != nil {
		e.t.Fatalf("UpdateClientConnState(%v) = %v, want nil", addrs, err)
	}
}

// readyAll sends addrs and makes every SubConn created READY, in order.
func (e *env) readyAll(addrs ...resolver.Address) []*lbtest.SubConn {
	e.t.Helper()
	e.mustUpdate(addrs...)
	var out []*lbtest.SubConn
	for _, sc := range e.h.CC.SubConns() {
		if !sc.IsShutdown() {
			sc.Connecting()
			sc.Ready()
			out = append(out, sc)
		}
	}
	return out
}

// picks makes n picks on the last picker, which must be READY, and returns
// the counts.
func (e *env) picks(n int) map[*lbtest.SubConn]int {
	e.t.Helper()
	s := e.h.State()
	if s.ConnectivityState != lb.Ready {
		e.t.Fatalf("state %v, want READY", s.ConnectivityState)
	}
	return countPicks(e.t, s.Picker, n)
}

// countPicks makes n picks on p and returns the counts by fake SubConn.
func countPicks(t lbtest.TB, p lb.Picker, n int) map[*lbtest.SubConn]int {
	t.Helper()
	counts, err := lbtest.CountPicks(p, n)
	if err != nil {
		t.Fatalf("picks: %v", err)
	}
	out := make(map[*lbtest.SubConn]int, len(counts))
	for sc, c := range counts {
		out[sc.(*lbtest.SubConn)] = c
	}
	return out
}

// sequence makes n picks on the last picker and returns the addresses.
func (e *env) sequence(n int) string {
	e.t.Helper()
	var b strings.Builder
	for range n {
		r, err := e.h.State().Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		if err != nil {
			e.t.Fatalf("pick: %v", err)
		}
		b.WriteString(r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr)
	}
	return b.String()
}

// wantCounts asserts n picks on the last picker give want, by SubConn
// index.
func (e *env) wantCounts(n int, want map[int]int) {
	e.t.Helper()
	got := e.picks(n)
	wantSC := make(map[*lbtest.SubConn]int, len(want))
	for i, c := range want {
		wantSC[e.h.SubConn(i)] = c
	}
	if !maps.Equal(got, wantSC) {
		e.t.Fatalf("%d picks: got %v, want %v", n, got, wantSC)
	}
}

// pickErr returns the last picker's error, failing if it picks a SubConn.
func (e *env) pickErr() error { e.t.Helper(); return e.h.PickErr() }

// wantTF asserts that the last state is TRANSIENT_FAILURE and that its
// picker's error matches every target with errors.Is.
func (e *env) wantTF(targets ...error) { e.t.Helper(); e.h.WantTransientFailure(targets...) }

// wantQueue asserts that the last state is CONNECTING with a picker that
// queues requests.
func (e *env) wantQueue() {
	e.t.Helper()
	if s := e.h.State(); s.ConnectivityState != lb.Connecting {
		e.t.Fatalf("state %v, want CONNECTING", s.ConnectivityState)
	}
	e.h.WantQueue()
}

// Event strings, as lbtest.Event.String prints them.
func newSC(id int, addr string) string   { return fmt.Sprintf("NewSubConn(SubConn(%d: [%s]))", id, addr) }
func connect(id int, addr string) string { return fmt.Sprintf("Connect(SubConn(%d: [%s]))", id, addr) }
func shutdown(id int, addr string) string {
	return fmt.Sprintf("Shutdown(SubConn(%d: [%s]))", id, addr)
}
func state(s lb.ConnectivityState) string { return fmt.Sprintf("UpdateState(%v)", s) }
