package pickfirst_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// machine drives one pick_first balancer with random steps and checks the
// A62 invariants after each. Its model is what a test can see from outside:
// the recorded events and the fake SubConns' states.
type machine struct {
	h    *lbtest.Harness
	pool []resolver.Address
	seen int // events checked so far
	n    int // counter for distinct error messages

	// What the last action was, for the checks.
	action string

	// Model of the policy's inputs.
	list      []resolver.Address // current de-duplicated list
	closed    bool
	closedNow bool // Close ran in this step

	// sticky is set while the policy must not report CONNECTING or IDLE.
	sticky bool

	// The running pass, as the checks see it: Connects must go forward in
	// the list, and only past addresses whose SubConn failed in this pass.
	inPass       bool
	lastIdx      int
	failedInPass map[*lbtest.SubConn]bool
	// Within the pass: SubConns it connected, and those of them that failed
	// since (a pass never connects those again).
	connectedInPass, failedAfterConnect map[*lbtest.SubConn]bool

	// Per SubConn: how many Connect calls it had when it last entered IDLE
	// (more now means a Connect is pending), and when its backoff ends
	// while in TRANSIENT_FAILURE.
	connectsAtIdle map[*lbtest.SubConn]int
	backoffEnd     map[*lbtest.SubConn]time.Time
}

func newMachine(t *rapid.T) *machine {
	h := lbtest.New(t)
	h.Build(pickfirst.Builder{})
	m := &machine{
		h:                  h,
		failedInPass:       map[*lbtest.SubConn]bool{},
		connectedInPass:    map[*lbtest.SubConn]bool{},
		failedAfterConnect: map[*lbtest.SubConn]bool{},
		connectsAtIdle:     map[*lbtest.SubConn]int{},
		backoffEnd:         map[*lbtest.SubConn]time.Time{},
	}
	// Five addresses, two of which differ from another only by server
	// name or attributes: distinct addresses all the same.
	a0, a1, a2 := resolver.Address{Addr: "a0"}, resolver.Address{Addr: "a1"}, resolver.Address{Addr: "a2"}
	m.pool = []resolver.Address{a0, a1, a2, {Addr: "a0", ServerName: "other"}, weight.Set(a1, 2)}
	return m
}

// live returns the SubConns not shut down, in creation order.
func (m *machine) live() []*lbtest.SubConn {
	var out []*lbtest.SubConn
	for _, sc := range m.h.CC.SubConns() {
		if !sc.IsShutdown() {
			out = append(out, sc)
		}
	}
	return out
}

func (m *machine) lastState() (lb.State, bool) { return m.h.CC.LastState() }

// readySubConn returns what the READY picker returns, or nil when the policy
// is not READY.
func (m *machine) readySubConn() lb.SubConn {
	s, ok := m.lastState()
	if !ok || s.ConnectivityState != lb.Ready {
		return nil
	}
	r, err := s.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
	if err != nil {
		return nil
	}
	return r.SubConn
}

// startPass records that a pass starts in this step.
func (m *machine) startPass() {
	m.inPass = true
	m.lastIdx = -1
	clear(m.failedInPass)
	clear(m.connectedInPass)
	clear(m.failedAfterConnect)
	for _, sc := range m.live() {
		if sc.State() == lb.TransientFailure {
			m.failedInPass[sc] = true
		}
	}
}

func (m *machine) update(t *rapid.T) {
	idx := rapid.SliceOfN(rapid.IntRange(0, len(m.pool)-1), 0, 7).Draw(t, "addresses")
	var addrs []resolver.Address
	for _, i := range idx {
		addrs = append(addrs, m.pool[i])
	}
	var dedup []resolver.Address
	for _, a := range addrs {
		if !slices.Contains(dedup, a) {
			dedup = append(dedup, a)
		}
	}
	m.action = "update"
	if !m.closed {
		prev, published := m.lastState()
		keep := false
		if sc := m.readySubConn(); sc != nil {
			keep = slices.Contains(dedup, sc.(*lbtest.SubConn).Addresses()[0])
		}
		switch {
		case len(dedup) == 0:
			m.inPass = false
		case keep, published && prev.ConnectivityState == lb.Idle:
		default:
			m.startPass()
		}
		m.list = dedup
	}
	err := m.h.UpdateAddresses(nil, addrs...)
	if wantErr := !m.closed && len(dedup) == 0; (err != nil) != wantErr || (wantErr && !errors.Is(err, lb.ErrBadResolverState)) {
		t.Fatalf("UpdateClientConnState(%v) = %v; want an ErrBadResolverState error: %v", addrs, err, wantErr)
	}
}

func (m *machine) resolverError(*rapid.T) {
	m.action = "resolverError"
	m.n++
	m.h.ResolverError(fmt.Errorf("resolver error %d", m.n))
}

// exitIdle calls ExitIdle directly (as a parent would) or through a pick on
// the current picker (as a request would).
func (m *machine) exitIdle(t *rapid.T) {
	s, ok := m.lastState()
	viaPick := rapid.Bool().Draw(t, "viaPick")
	if viaPick && !ok {
		t.Skip("no picker yet")
	}
	m.action = "exitIdle"
	wasIdle := ok && s.ConnectivityState == lb.Idle
	if wasIdle && !m.closed {
		m.startPass()
	}
	if viaPick {
		s.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		m.h.Settle()
	} else {
		m.h.ExitIdle()
	}
	if now, _ := m.lastState(); wasIdle && !m.closed && now.ConnectivityState == lb.Idle {
		t.Fatalf("still IDLE after leaving IDLE was asked (via pick: %v)", viaPick)
	}
}

// subConnState moves one live SubConn along a transition a real SubConn
// makes: IDLE to CONNECTING once Connect was called, CONNECTING to READY,
// TRANSIENT_FAILURE or IDLE, READY to IDLE, TRANSIENT_FAILURE to IDLE.
func (m *machine) subConnState(t *rapid.T) {
	live := m.live()
	if len(live) == 0 {
		t.Skip("no live SubConn")
	}
	sc := rapid.SampledFrom(live).Draw(t, "subConn")
	var next []lb.ConnectivityState
	switch sc.State() {
	case lb.Idle:
		if sc.ConnectCount() > m.connectsAtIdle[sc] {
			next = []lb.ConnectivityState{lb.Connecting}
		}
	case lb.Connecting:
		next = []lb.ConnectivityState{lb.Ready, lb.TransientFailure, lb.Idle}
	case lb.Ready, lb.TransientFailure:
		next = []lb.ConnectivityState{lb.Idle}
	}
	if len(next) == 0 {
		t.Skip("no transition")
	}
	m.setState(t, sc, rapid.SampledFrom(next).Draw(t, "state"))
}

// anyState moves one live SubConn to any state, as a misbehaving channel
// might; the invariants must hold anyway.
func (m *machine) anyState(t *rapid.T) {
	live := m.live()
	if len(live) == 0 {
		t.Skip("no live SubConn")
	}
	sc := rapid.SampledFrom(live).Draw(t, "subConn")
	s := rapid.SampledFrom([]lb.ConnectivityState{lb.Idle, lb.Connecting, lb.Ready, lb.TransientFailure}).Draw(t, "state")
	m.setState(t, sc, s)
}

func (m *machine) setState(t *rapid.T, sc *lbtest.SubConn, s lb.ConnectivityState) {
	m.action = "subConnState"
	switch s {
	case lb.Idle:
		m.connectsAtIdle[sc] = sc.ConnectCount() // before the policy reacts
		sc.Idle()
	case lb.TransientFailure:
		m.n++
		m.backoffEnd[sc] = m.h.Clock.Now().Add(time.Duration(rapid.IntRange(1, 4).Draw(t, "backoffSeconds")) * time.Second)
		if m.inPass {
			m.failedInPass[sc] = true
			m.failedAfterConnect[sc] = m.connectedInPass[sc]
		}
		sc.Fail(fmt.Errorf("%v: connection error %d", sc, m.n))
	default:
		sc.UpdateState(lb.SubConnState{ConnectivityState: s})
	}
}

// advance moves the clock to the end of the earliest backoff; every SubConn
// whose backoff has ended returns to IDLE.
func (m *machine) advance(t *rapid.T) {
	var due []*lbtest.SubConn
	var next time.Time
	for _, sc := range m.live() {
		if sc.State() != lb.TransientFailure {
			continue
		}
		end := m.backoffEnd[sc]
		if len(due) == 0 || end.Before(next) {
			due, next = nil, end
		}
		if end.Equal(next) {
			due = append(due, sc)
		}
	}
	if len(due) == 0 {
		t.Skip("nobody backing off")
	}
	m.action = "advance"
	if d := next.Sub(m.h.Clock.Now()); d > 0 {
		m.h.Advance(d)
	}
	for _, sc := range due {
		if !sc.IsShutdown() {
			m.connectsAtIdle[sc] = sc.ConnectCount()
			sc.Idle()
		}
	}
}

// check runs after every step.
func (m *machine) check(t *rapid.T) {
	all := m.h.CC.Events()
	events := all[m.seen:]
	m.seen = len(all)
	haveAddrs := len(m.list) > 0

	for _, ev := range events {
		if m.closed && !(m.closedNow && ev.Kind == lbtest.EventShutdown) {
			t.Fatalf("after Close: %v", ev)
		}
		switch ev.Kind {
		case lbtest.EventConnect:
			m.checkConnect(t, ev.SubConn)
		case lbtest.EventNewSubConn:
			if !slices.Contains(m.list, ev.SubConn.Addresses()[0]) {
				t.Fatalf("%v for an address not in %v", ev, m.list)
			}
		case lbtest.EventUpdateState:
			s := ev.State.ConnectivityState
			if m.sticky && (s == lb.Connecting || s == lb.Idle) {
				t.Fatalf("reported %v after TRANSIENT_FAILURE, before READY", s)
			}
			switch s {
			case lb.Ready:
				m.sticky = false
			case lb.TransientFailure:
				// Failures with addresses are sticky; "zero addresses" and
				// resolver errors without addresses are not.
				m.sticky = haveAddrs
			}
			if m.action != "resolverError" && s != lb.Connecting {
				m.inPass = false // READY, or TRANSIENT_FAILURE ending the pass
			}
		}
	}
	m.closedNow = false
	if !m.closed && m.inPass {
		m.checkPassWaits(t)
	}

	live := m.live()
	if m.closed {
		if len(live) > 0 {
			t.Fatalf("after Close, %v not shut down", live)
		}
		return
	}
	// One SubConn per address, all for current addresses.
	var liveAddrs []resolver.Address
	for _, sc := range live {
		a := sc.Addresses()[0]
		if slices.Contains(liveAddrs, a) || !slices.Contains(m.list, a) {
			t.Fatalf("live SubConns %v for list %v", live, m.list)
		}
		liveAddrs = append(liveAddrs, a)
	}

	s, ok := m.lastState()
	if !ok {
		return
	}
	switch s.ConnectivityState {
	case lb.Ready:
		sc := m.readySubConn()
		if sc == nil || sc.(*lbtest.SubConn).State() != lb.Ready || sc.(*lbtest.SubConn).IsShutdown() {
			t.Fatalf("READY picker returns %v, not a READY SubConn", sc)
		}
		if len(live) != 1 || live[0] != sc {
			t.Fatalf("READY on %v while %v are live", sc, live)
		}
	case lb.Connecting, lb.TransientFailure:
		_, err := s.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		want := lb.ErrNoSubConnAvailable
		if s.ConnectivityState == lb.TransientFailure {
			want = lb.ErrTransientFailure
		}
		if !errors.Is(err, want) {
			t.Fatalf("%v picker error %v, want %v", s.ConnectivityState, err, want)
		}
		// No wedge: during a pass some SubConn is on its way to report
		// again; once sticky, every one is.
		if haveAddrs && !m.progressing(live, !m.inPass) {
			t.Fatalf("%v (in pass: %v) with a SubConn neither connecting, pending nor backing off: %v",
				s.ConnectivityState, m.inPass, m.describe(live))
		}
	}
}

// checkConnect checks a Connect call: only on an IDLE SubConn, and during a
// pass, forward in the list, past only addresses that failed in this pass.
func (m *machine) checkConnect(t *rapid.T, sc *lbtest.SubConn) {
	if st := sc.State(); st != lb.Idle {
		t.Fatalf("Connect on %v in %v", sc, st)
	}
	if !m.inPass {
		return
	}
	if m.failedAfterConnect[sc] {
		t.Fatalf("pass connected %v again after it failed", sc)
	}
	m.connectedInPass[sc] = true
	i := slices.Index(m.list, sc.Addresses()[0])
	if i < m.lastIdx {
		t.Fatalf("pass connected %v (index %d) after index %d of %v", sc, i, m.lastIdx, m.list)
	}
	for j := m.lastIdx + 1; j < i; j++ {
		skipped := m.subConnFor(m.list[j])
		if skipped == nil || !m.failedInPass[skipped] {
			t.Fatalf("pass skipped %v (SubConn %v) for %v", m.list[j], skipped, sc)
		}
	}
	m.lastIdx = i
}

// checkPassWaits checks that a running pass is waiting where it should: if
// it has not connected anything yet, or the SubConn it connected last has
// failed, it must have skipped ahead (past SubConns that failed in this
// pass) to a SubConn that is CONNECTING; an IDLE or missing SubConn there
// should have been connected, and the end of the list should have ended the
// pass.
func (m *machine) checkPassWaits(t *rapid.T) {
	if m.lastIdx >= 0 {
		if sc := m.subConnFor(m.list[m.lastIdx]); sc != nil && !m.failedAfterConnect[sc] {
			return // waiting on the SubConn it connected
		}
	}
	for j := m.lastIdx + 1; j < len(m.list); j++ {
		sc := m.subConnFor(m.list[j])
		switch {
		case sc != nil && sc.State() == lb.Connecting:
			return
		case sc != nil && m.failedInPass[sc]:
			continue
		}
		t.Fatalf("pass stalled before %v (SubConn %v) in %v", m.list[j], sc, m.list)
	}
	t.Fatalf("pass over %v did not end after every address failed", m.list)
}

func (m *machine) subConnFor(a resolver.Address) *lbtest.SubConn {
	for _, sc := range m.live() {
		if sc.Addresses()[0] == a {
			return sc
		}
	}
	return nil
}

// progressing reports whether some SubConn (every one, if all is set) will
// report again without help: connecting, backing off, or IDLE with a Connect
// pending.
func (m *machine) progressing(live []*lbtest.SubConn, all bool) bool {
	n := 0
	for _, sc := range live {
		switch st := sc.State(); {
		case st == lb.Connecting, st == lb.TransientFailure,
			st == lb.Idle && sc.ConnectCount() > m.connectsAtIdle[sc]:
			n++
		}
	}
	if all {
		return n == len(live)
	}
	return n > 0
}

func (m *machine) describe(live []*lbtest.SubConn) string {
	var out []string
	for _, sc := range live {
		out = append(out, fmt.Sprintf("%v %v connects=%d atIdle=%d", sc, sc.State(), sc.ConnectCount(), m.connectsAtIdle[sc]))
	}
	return fmt.Sprint(out)
}

// actions returns the steps; a step listed under several names is drawn
// that many times more often.
func (m *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"":              m.check,
		"update":        m.update,
		"update2":       m.update,
		"resolverError": m.resolverError,
		"exitIdle":      m.exitIdle,
		"subConnState":  m.subConnState,
		"subConnState2": m.subConnState,
		"subConnState3": m.subConnState,
		"subConnState4": m.subConnState,
		"anyState":      m.anyState,
		"advance":       m.advance,
		"advance2":      m.advance,
	}
}

// finish closes the balancer, checks that every SubConn was shut down, and
// then that a few more calls of every kind do nothing.
func (m *machine) finish(t *rapid.T) {
	m.action = "close"
	m.h.CloseBalancer()
	m.closed, m.closedNow = true, true
	m.check(t)
	for _, sc := range m.h.CC.SubConns() {
		if !sc.IsShutdown() {
			t.Fatalf("%v not shut down after Close", sc)
		}
	}
	m.update(t)
	m.check(t)
	m.resolverError(t)
	m.check(t)
	m.h.ExitIdle()
	m.check(t)
	if s, ok := m.lastState(); ok {
		s.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		m.h.Settle()
		m.check(t)
	}
	m.h.CloseBalancer()
	m.check(t)
}

func TestStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine(t) // fresh state for every run
		t.Repeat(m.actions())
		m.finish(t)
	})
}
