package wrr_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
	"github.com/lbkit/lbkit/lb/wrr"
)

// endpoint is the model's view of one endpoint: its index in the pool and
// its effective weight.
type endpoint struct {
	idx    int
	weight int
}

// machine drives one weighted_round_robin balancer with random address and
// weight updates, SubConn state changes, resolver errors and picks, and
// checks after every step what a test can see from outside: the SubConns,
// the published state and its picker.
type machine struct {
	e    *env
	pool []resolver.Address // distinct endpoints, without weights
	n    int                // counter for distinct error messages

	// Model of the policy's inputs.
	list        []endpoint // current endpoints, de-duplicated, in order
	updated     bool       // an update (or resolver error) was sent
	empty       bool       // the last update was empty
	sticky      map[*lbtest.SubConn]bool
	lastConnErr error
	resolverErr error
	closed      bool
	published   int // states published when the last check ran
}

func newMachine(t *rapid.T) *machine {
	m := &machine{
		e:      newEnv(t, wrr.Config{RandomStart: rapid.Bool().Draw(t, "randomStart")}, lbtest.WithSeed(rapid.Uint64().Draw(t, "seed"))),
		sticky: map[*lbtest.SubConn]bool{},
	}
	// Four endpoints, one of which differs from another only by server
	// name: a distinct endpoint all the same.
	for _, name := range []string{"e0", "e1", "e2", "e3"} {
		m.pool = append(m.pool, resolver.Address{Addr: name})
	}
	m.pool = append(m.pool, resolver.Address{Addr: "e0", ServerName: "other"})
	return m
}

// poolIndex returns the pool index of a SubConn's endpoint.
func (m *machine) poolIndex(t *rapid.T, sc *lbtest.SubConn) int {
	a := sc.Addresses()[0]
	for i, p := range m.pool {
		if p.Addr == a.Addr && p.ServerName == a.ServerName {
			return i
		}
	}
	t.Fatalf("%v is for no endpoint of the pool", sc)
	return -1
}

// live returns the SubConns not shut down, in creation order.
func (m *machine) live() []*lbtest.SubConn {
	var out []*lbtest.SubConn
	for _, sc := range m.e.h.CC.SubConns() {
		if !sc.IsShutdown() {
			out = append(out, sc)
		}
	}
	return out
}

// update sends up to 7 addresses drawn from the pool, each with a weight of
// 0 to 5 or none; duplicates are likely.
func (m *machine) update(t *rapid.T) {
	k := rapid.IntRange(0, 7).Draw(t, "len")
	var addrs []resolver.Address
	var list []endpoint
	seen := map[int]bool{}
	for range k {
		i := rapid.IntRange(0, len(m.pool)-1).Draw(t, "endpoint")
		w := rapid.IntRange(-1, 5).Draw(t, "weight")
		a := m.pool[i]
		if w >= 0 {
			a = weight.Set(a, uint32(w))
		}
		addrs = append(addrs, a)
		if !seen[i] {
			seen[i] = true
			list = append(list, endpoint{idx: i, weight: max(w, 1)})
		}
	}
	err := m.e.h.UpdateAddresses(m.e.cfg, addrs...)
	if m.closed {
		if err != nil {
			t.Fatalf("update after Close = %v, want nil", err)
		}
		return
	}
	if wantErr := len(addrs) == 0; (err != nil) != wantErr || (wantErr && !errors.Is(err, lb.ErrBadResolverState)) {
		t.Fatalf("UpdateClientConnState(%v) = %v; want an ErrBadResolverState error: %v", addrs, err, wantErr)
	}
	m.list, m.updated, m.empty, m.resolverErr = list, true, len(addrs) == 0, nil
	for sc := range m.sticky {
		if sc.IsShutdown() {
			delete(m.sticky, sc)
		}
	}
}

func (m *machine) resolverError(*rapid.T) {
	m.n++
	err := fmt.Errorf("resolver error %d", m.n)
	m.e.h.ResolverError(err)
	if !m.closed {
		m.resolverErr, m.updated = err, true
	}
}

// subConnState moves one live SubConn along a transition a real SubConn
// makes: IDLE to CONNECTING (the policy always asked it to connect),
// CONNECTING to READY, TRANSIENT_FAILURE or IDLE, READY to IDLE,
// TRANSIENT_FAILURE to IDLE.
func (m *machine) subConnState(t *rapid.T) {
	live := m.live()
	if len(live) == 0 {
		t.Skip("no live SubConn")
	}
	// Draw an index and a state name rather than the values themselves,
	// so that a shrunk failure reads well.
	sc := live[rapid.IntRange(0, len(live)-1).Draw(t, "live SubConn index")]
	t.Logf("SubConn: %v in %v", sc, sc.State())
	var next []string
	switch sc.State() {
	case lb.Idle:
		next = []string{"CONNECTING"}
	case lb.Connecting:
		next = []string{"READY", "TRANSIENT_FAILURE", "IDLE"}
	case lb.Ready, lb.TransientFailure:
		next = []string{"IDLE"}
	}
	to := stateByName[rapid.SampledFrom(next).Draw(t, "to")]
	connects := sc.ConnectCount()
	switch to {
	case lb.TransientFailure:
		m.n++
		err := fmt.Errorf("connection error %d", m.n)
		sc.Fail(err)
		m.lastConnErr = err
		m.sticky[sc] = true
	case lb.Ready:
		sc.Ready()
		m.sticky[sc] = false
	default:
		sc.UpdateState(lb.SubConnState{ConnectivityState: to})
	}
	if to == lb.Idle && sc.ConnectCount() != connects+1 {
		t.Fatalf("%v reported IDLE: %d Connect calls, want 1", sc, sc.ConnectCount()-connects)
	}
}

var stateByName = map[string]lb.ConnectivityState{
	"IDLE": lb.Idle, "CONNECTING": lb.Connecting, "READY": lb.Ready, "TRANSIENT_FAILURE": lb.TransientFailure,
}

// pick makes a few picks on the current picker, to move the schedule to a
// random point before the next rebuild.
func (m *machine) pick(t *rapid.T) {
	s, ok := m.e.h.CC.LastState()
	if !ok {
		t.Skip("no picker")
	}
	for range rapid.IntRange(1, 7).Draw(t, "picks") {
		s.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
	}
}

// wantState returns the state the rule gives for the model: TRANSIENT_FAILURE
// with no endpoint, else the aggregate of the counted states, where a
// SubConn counts as READY when READY, as TRANSIENT_FAILURE from a failure
// until READY, and as CONNECTING otherwise.
func (m *machine) wantState() lb.ConnectivityState {
	var c lb.StateCounter
	for _, sc := range m.live() {
		switch {
		case sc.State() == lb.Ready:
			c.Add(lb.Ready)
		case m.sticky[sc]:
			c.Add(lb.TransientFailure)
		default:
			c.Add(lb.Connecting)
		}
	}
	return c.Aggregate()
}

func (m *machine) check(t *rapid.T) {
	all := m.e.h.CC.States.All()
	newStates := all[m.published:]
	m.published = len(all)
	if m.closed {
		if len(newStates) > 0 {
			t.Fatalf("%d states published after Close", len(newStates))
		}
		return
	}
	for _, s := range newStates {
		if s.ConnectivityState == lb.Idle {
			t.Fatalf("published IDLE")
		}
	}

	// One live SubConn per endpoint of the list, each asked to connect.
	live := m.live()
	if len(live) != len(m.list) {
		t.Fatalf("%d live SubConns %v for endpoints %v", len(live), live, m.list)
	}
	weights := map[*lbtest.SubConn]int{}
	for _, sc := range live {
		i := m.poolIndex(t, sc)
		found := false
		for _, ep := range m.list {
			if ep.idx == i {
				weights[sc], found = ep.weight, true
			}
		}
		if !found {
			t.Fatalf("%v is live but endpoint %d is not listed (%v)", sc, i, m.list)
		}
		if sc.ConnectCount() == 0 {
			t.Fatalf("%v never asked to connect", sc)
		}
	}

	s, ok := m.e.h.CC.LastState()
	if !m.updated {
		if ok {
			t.Fatalf("state %v published before any update", s.ConnectivityState)
		}
		return
	}
	want := lb.TransientFailure
	if len(m.list) > 0 {
		want = m.wantState()
	}
	if !ok || s.ConnectivityState != want {
		t.Fatalf("state %v (published: %v), want %v", s.ConnectivityState, ok, want)
	}
	switch want {
	case lb.Ready:
		m.checkPeriod(t, s.Picker, weights)
	case lb.Connecting:
		if _, err := s.Picker.Pick(lb.PickInfo{Ctx: context.Background()}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
			t.Fatalf("CONNECTING picker: %v, want ErrNoSubConnAvailable", err)
		}
	case lb.TransientFailure:
		_, err := s.Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		targets := []error{lb.ErrTransientFailure}
		if m.resolverErr != nil {
			targets = append(targets, m.resolverErr)
		}
		switch {
		case len(m.list) > 0 && m.lastConnErr != nil:
			targets = append(targets, m.lastConnErr)
		case m.empty && m.resolverErr == nil && (err == nil || !strings.Contains(err.Error(), "zero addresses")):
			t.Fatalf("TRANSIENT_FAILURE picker after an empty update: %v, want it to name zero addresses", err)
		}
		for _, target := range targets {
			if !errors.Is(err, target) {
				t.Fatalf("TRANSIENT_FAILURE picker: %v, want it to match %v", err, target)
			}
		}
	}
}

// checkPeriod makes one period of picks (W/g of them, W the sum of the
// READY endpoints' weights and g their gcd) and checks that they return
// only READY SubConns, each exactly w/g times.
func (m *machine) checkPeriod(t *rapid.T, p lb.Picker, weights map[*lbtest.SubConn]int) {
	var ready []int
	sum := 0
	for sc, w := range weights {
		if sc.State() == lb.Ready {
			ready = append(ready, w)
			sum += w
		}
	}
	g := gcdOf(ready)
	counts := countPicks(t, p, sum/g)
	for sc, c := range counts {
		if sc.State() != lb.Ready {
			t.Fatalf("picked %v in %v", sc, sc.State())
		}
		if c != weights[sc]/g {
			t.Fatalf("%v (weight %d): %d picks in a period of %d, want %d", sc, weights[sc], c, sum/g, weights[sc]/g)
		}
	}
	for sc, w := range weights {
		if sc.State() == lb.Ready && counts[sc] == 0 {
			t.Fatalf("%v (weight %d) READY but never picked in a period", sc, w)
		}
	}
}

// actions returns the steps; a step listed under several names is drawn
// that many times more often.
func (m *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"":              m.check,
		"update":        m.update,
		"update2":       m.update,
		"resolverError": m.resolverError,
		"subConnState":  m.subConnState,
		"subConnState2": m.subConnState,
		"subConnState3": m.subConnState,
		"subConnState4": m.subConnState,
		"pick":          m.pick,
	}
}

// finish closes the balancer, checks that every SubConn was shut down, and
// then that more calls of every kind do nothing.
func (m *machine) finish(t *rapid.T) {
	m.e.h.CloseBalancer()
	m.closed = true
	for _, sc := range m.e.h.CC.SubConns() {
		if !sc.IsShutdown() {
			t.Fatalf("%v not shut down after Close", sc)
		}
	}
	m.check(t)
	m.update(t)
	m.resolverError(t)
	m.e.h.ExitIdle()
	m.e.h.CloseBalancer()
	m.check(t)
	if n := len(m.e.h.CC.SubConns()); n != len(m.e.h.CC.Shutdowns.All()) {
		t.Fatalf("%d SubConns created after Close", n-len(m.e.h.CC.Shutdowns.All()))
	}
}

// TestStateMachine checks, after every random step, that there is one
// SubConn per endpoint, that the published state follows the aggregation
// rule with sticky TRANSIENT_FAILURE, that the READY picker returns only
// READY SubConns and matches the weights exactly over a period, and that
// the other pickers queue or fail with the right error.
func TestStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine(t) // fresh state for every run
		t.Repeat(m.actions())
		m.finish(t)
	})
}
