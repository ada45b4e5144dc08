package pickfirst_test

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/pickfirst"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a pick_first balancer on the lbtest harness, with a cursor into the
// recorded events so each step can assert exactly what it caused.
type env struct {
	t testing.TB
	h *lbtest.Harness
}

func newEnv(t testing.TB, opts ...lbtest.Option) *env {
	t.Helper()
	h := lbtest.New(t, opts...)
	h.Build(pickfirst.Builder{})
	return &env{t: t, h: h}
}

// update sends names as the address list with cfg, and returns the error.
func (e *env) update(cfg lb.Config, names ...string) error {
	e.t.Helper()
	return e.h.UpdateAddresses(cfg, lbtest.Addresses(names...)...)
}

// mustUpdate is update that must succeed.
func (e *env) mustUpdate(names ...string) {
	e.t.Helper()
	if err := e.update(nil, names...); err != nil {
		e.t.Fatalf("UpdateClientConnState(%v) = %v, want nil", names, err)
	}
}

// wantPick asserts that the last picker returns sc.
func (e *env) wantPick(sc *lbtest.SubConn) {
	e.t.Helper()
	s := e.h.State()
	if s.ConnectivityState != lb.Ready {
		e.t.Fatalf("state %v, want READY", s.ConnectivityState)
	}
	counts, err := lbtest.CountPicks(s.Picker, 10)
	if err != nil || counts[sc] != 10 {
		e.t.Fatalf("picks = %v, %v; want 10 on %v", counts, err, sc)
	}
}

// pickErr returns the last picker's error, failing if it picks a SubConn.
// Do not use it on an IDLE picker unless leaving IDLE is intended.
func (e *env) pickErr() error { e.t.Helper(); return e.h.PickErr() }

// wantTF asserts that the last state is TRANSIENT_FAILURE and that its
// picker's error matches every target with errors.Is.
func (e *env) wantTF(targets ...error) { e.t.Helper(); e.h.WantTransientFailure(targets...) }

// wantQueue asserts that the last picker queues requests.
func (e *env) wantQueue() { e.t.Helper(); e.h.WantQueue() }

// Event strings, as lbtest.Event.String prints them.
func newSC(id int, addr string) string   { return fmt.Sprintf("NewSubConn(SubConn(%d: [%s]))", id, addr) }
func connect(id int, addr string) string { return fmt.Sprintf("Connect(SubConn(%d: [%s]))", id, addr) }
func shutdown(id int, addr string) string {
	return fmt.Sprintf("Shutdown(SubConn(%d: [%s]))", id, addr)
}
func state(s lb.ConnectivityState) string { return fmt.Sprintf("UpdateState(%v)", s) }

const resolveNow = "ResolveNow"
