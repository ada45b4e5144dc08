package priority

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// recScheduler wraps the harness's serializer to remember every timer's
// deadline, so the test can compare lbkit's pending timers with the
// model's.
type recScheduler struct {
	inner lb.Scheduler
	clock clock.Clock

	mu     sync.Mutex
	timers []*recTimer
}

type recTimer struct {
	s        *recScheduler
	inner    lb.Timer
	deadline time.Time
	done     bool // fired or stopped; guarded by s.mu
}

func (s *recScheduler) Schedule(f func()) bool { return s.inner.Schedule(f) }

func (s *recScheduler) AfterFunc(d time.Duration, f func()) lb.Timer {
	t := &recTimer{s: s, deadline: s.clock.Now().Add(d)}
	s.mu.Lock()
	s.timers = append(s.timers, t)
	s.mu.Unlock()
	t.inner = s.inner.AfterFunc(d, func() {
		s.mu.Lock()
		t.done = true
		s.mu.Unlock()
		f()
	})
	return t
}

func (t *recTimer) Stop() bool {
	ok := t.inner.Stop()
	t.s.mu.Lock()
	t.done = true
	t.s.mu.Unlock()
	return ok
}

// pending returns the deadlines of the timers neither fired nor stopped,
// sorted.
func (s *recScheduler) pending() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	live := s.timers[:0]
	for _, t := range s.timers {
		if !t.done {
			out = append(out, t.deadline)
			live = append(live, t)
		}
	}
	s.timers = live
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// machine drives lbkit's priority policy and the model side by side.
type machine struct {
	e     *env
	sched *recScheduler
	m     *model
	names []string // the pool of child names
	token int
}

// reportStates are the states a child may report, by name so that shrunk
// failures read well.
var reportStates = map[string]lb.ConnectivityState{
	"IDLE": lb.Idle, "CONNECTING": lb.Connecting, "READY": lb.Ready, "TRANSIENT_FAILURE": lb.TransientFailure,
}

var reportStateNames = []string{"CONNECTING", "IDLE", "READY", "TRANSIENT_FAILURE"}

func newMachine(t *rapid.T) *machine {
	retainRemoved := rapid.Bool().Draw(t, "retainRemoved")
	h := lbtest.NewParent(t)
	sched := &recScheduler{inner: h.Serializer, clock: h.Clock}
	opts := h.BuildOptions()
	opts.Scheduler = sched
	b := NewBuilder(WithRetainRemovedChildren(retainRemoved))
	h.Registry().Register(b) // for h.ParseConfig
	h.Do(func() { h.Balancer = b.Build(h.CC, opts) })
	mc := &machine{
		e:     &env{t: t, h: h},
		sched: sched,
		m:     newModel(h.Clock.Now(), retainRemoved),
		names: []string{"a", "b", "c", "d"},
	}
	first := rapid.SliceOfNDistinct(rapid.SampledFrom(mc.names), 0, len(mc.names), rapid.ID[string]).Draw(t, "initial")
	mc.setConfig(first)
	return mc
}

func (mc *machine) setConfig(priorities []string) {
	var children []childSpec
	for _, n := range priorities {
		children = append(children, scriptChild(n))
	}
	if err := mc.e.h.UpdateAddresses(mc.e.config(children...)); err != nil {
		mc.e.t.Fatalf("UpdateClientConnState: %v", err)
	}
	mc.m.UpdateConfig(priorities)
}

func (mc *machine) unused() []string {
	var out []string
	for _, n := range mc.names {
		if !slices.Contains(mc.m.priorities, n) {
			out = append(out, n)
		}
	}
	return out
}

// Report makes any existing child report a state.
func (mc *machine) Report(t *rapid.T) {
	names := mc.m.sortedChildren()
	if len(names) == 0 {
		t.Skip("no child")
	}
	mc.report(t, rapid.SampledFrom(names).Draw(t, "child"))
}

// ReportCurrent makes the current child report a state: the events that
// drive failover and the failover timer's rules.
func (mc *machine) ReportCurrent(t *rapid.T) {
	if mc.m.current() == "" {
		t.Skip("no current child")
	}
	mc.report(t, mc.m.current())
}

func (mc *machine) report(t *rapid.T, name string) {
	state := reportStates[rapid.SampledFrom(reportStateNames).Draw(t, "state")]
	mc.token++
	token := fmt.Sprintf("%s#%d", name, mc.token)
	mc.e.h.Report(name, state, token)
	mc.m.OnConnectivityStateUpdate(name, state, token)
}

func (mc *machine) Add(t *rapid.T) {
	unused := mc.unused()
	if len(unused) == 0 {
		t.Skip("every name in use")
	}
	name := rapid.SampledFrom(unused).Draw(t, "name")
	at := rapid.IntRange(0, len(mc.m.priorities)).Draw(t, "at")
	mc.setConfig(slices.Insert(slices.Clone(mc.m.priorities), at, name))
}

func (mc *machine) Remove(t *rapid.T) {
	if len(mc.m.priorities) == 0 {
		t.Skip("no priority")
	}
	at := rapid.IntRange(0, len(mc.m.priorities)-1).Draw(t, "at")
	mc.setConfig(slices.Delete(slices.Clone(mc.m.priorities), at, at+1))
}

func (mc *machine) Reorder(t *rapid.T) {
	p := rapid.Permutation(mc.m.priorities).Draw(t, "order")
	mc.setConfig(p)
}

func (mc *machine) Rename(t *rapid.T) {
	unused := mc.unused()
	if len(mc.m.priorities) == 0 || len(unused) == 0 {
		t.Skip("nothing to rename")
	}
	at := rapid.IntRange(0, len(mc.m.priorities)-1).Draw(t, "at")
	p := slices.Clone(mc.m.priorities)
	p[at] = rapid.SampledFrom(unused).Draw(t, "new name")
	mc.setConfig(p)
}

func (mc *machine) Resend(*rapid.T) { mc.setConfig(mc.m.priorities) }

func (mc *machine) Advance(t *rapid.T) {
	d, ok := mc.e.h.AdvanceToNextDeadline()
	before := mc.m.now
	if mok := mc.m.AdvanceToNextDeadline(); mok != ok || mc.m.now.Sub(before) != d {
		t.Fatalf("advance: lbkit moved %v (timer pending %v), the model %v (timer pending %v)", d, ok, mc.m.now.Sub(before), mok)
	}
}

// Wait moves the clock forward by less than the time to the next deadline,
// so that later timers start at instants other than deadlines.
func (mc *machine) Wait(t *rapid.T) {
	limit := 20 * time.Second
	if timers := mc.m.pendingTimers(); len(timers) > 0 {
		limit = min(limit, timers[0].deadline.Sub(mc.m.now)-time.Nanosecond)
	}
	if limit < time.Second {
		t.Skip("a deadline is too close")
	}
	d := time.Duration(rapid.Int64Range(1, int64(limit/time.Second)).Draw(t, "seconds")) * time.Second
	mc.e.h.Advance(d)
	mc.m.now = mc.m.now.Add(d)
}

func (mc *machine) ExitIdle(t *rapid.T) {
	counts := func() map[*lbtest.Script]int {
		out := make(map[*lbtest.Script]int)
		for _, s := range mc.e.h.Scripts.All() {
			out[s] = s.ExitIdles()
		}
		return out
	}
	before := counts()
	mc.e.h.ExitIdle()
	after := counts()
	for s, n := range after {
		want := before[s]
		if cur := mc.m.current(); cur != "" && s == mc.e.h.Scripts.Get(cur) {
			want++
		}
		if n != want {
			t.Fatalf("ExitIdle reached %s %d times, want %d (current child %q)", s.ID(), n-before[s], want-before[s], mc.m.current())
		}
	}
}

// Check compares everything observable with the model.
func (mc *machine) Check(t *rapid.T) {
	e, m := mc.e, mc.m
	// What was published since the last check, in order.
	var got, want []string
	for _, s := range e.h.CC.States.Drain() {
		got = append(got, s.ConnectivityState.String()+"/"+lbtest.PickerToken(s.Picker))
	}
	for _, p := range m.published {
		want = append(want, p.state.String()+"/"+p.picker)
	}
	m.published = nil
	if !slices.Equal(got, want) {
		t.Fatalf("published %v, model %v", got, want)
	}

	// Children, their states and timers, and the current child.
	type childView struct {
		name, picker      string
		state             lb.ConnectivityState
		active            bool
		failover          time.Time
		failoverIsPending bool
	}
	var real []childView
	var current string
	e.h.Do(func() {
		b := e.b()
		if b.current != nil {
			current = b.current.Name()
		}
		for _, c := range b.children.Children() {
			v := childView{name: c.Name(), picker: lbtest.PickerToken(c.Data.picker), state: c.Data.state, active: c.Active()}
			if c.Data.failover != nil {
				v.failoverIsPending, v.failover = true, c.Data.failoverAt // its timer's deadline: sched.pending checks the timers
			}
			real = append(real, v)
		}
	})
	var model []childView
	var modelTimers []time.Time
	for _, name := range m.sortedChildren() {
		c := m.children[name]
		v := childView{name: name, picker: c.picker, state: c.connectivityState, active: c.deactivationTimer == nil}
		if c.failoverTimer != nil {
			v.failoverIsPending, v.failover = true, c.failoverTimer.deadline
			modelTimers = append(modelTimers, c.failoverTimer.deadline)
		}
		if c.deactivationTimer != nil {
			modelTimers = append(modelTimers, c.deactivationTimer.deadline)
		}
		model = append(model, v)
	}
	if !slices.Equal(real, model) {
		t.Fatalf("children:\n lbkit %+v\n model %+v", real, model)
	}
	if current != m.current() {
		t.Fatalf("current child %q, model %q", current, m.current())
	}
	slices.SortFunc(modelTimers, time.Time.Compare)
	if got := mc.sched.pending(); !slices.Equal(got, modelTimers) {
		t.Fatalf("pending timers %v, model %v", got, modelTimers)
	}

	// Each existing child runs its newest script balancer; every other
	// script balancer was closed.
	live := make(map[*lbtest.Script]bool)
	for _, name := range m.sortedChildren() {
		s := e.h.Scripts.Get(name)
		if s == nil || s.Closed() {
			t.Fatalf("child %s has no live balancer", name)
		}
		live[s] = true
	}
	for _, s := range e.h.Scripts.All() {
		if !live[s] && !s.Closed() {
			t.Fatalf("a balancer of destroyed child %s was not closed", s.ID())
		}
	}
}

// TestStateMachineMatchesA56Model runs random sequences of child reports,
// config updates and clock moves against lbkit and the model, comparing
// after every step. It runs rapid's checks several times over (once with
// -short) since each check is cheap.
func TestStateMachineMatchesA56Model(t *testing.T) {
	t.Parallel()
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	for i := range rounds {
		t.Run(fmt.Sprintf("round%d", i), checkStateMachine)
	}
}

func checkStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mc := newMachine(t)
		t.Repeat(map[string]func(*rapid.T){
			"report":   mc.Report,
			"current":  mc.ReportCurrent,
			"current2": mc.ReportCurrent, // child reports are the common event
			"add":      mc.Add,
			"remove":   mc.Remove,
			"reorder":  mc.Reorder,
			"rename":   mc.Rename,
			"resend":   mc.Resend,
			"advance":  mc.Advance,
			"advance2": mc.Advance,
			"wait":     mc.Wait,
			"exitIdle": mc.ExitIdle,
			"":         mc.Check,
		})
	})
}
