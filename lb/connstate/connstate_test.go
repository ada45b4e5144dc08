package connstate

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"pgregory.net/rapid"
)

// manualSched is an lb.Scheduler whose timers fire when the test says.
type manualSched struct{ timers []*manualTimer }

type manualTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (t *manualTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

func (s *manualSched) Schedule(f func()) bool { s.AfterFunc(0, f); return true }
func (s *manualSched) AfterFunc(d time.Duration, f func()) lb.Timer {
	t := &manualTimer{d: d, f: f}
	s.timers = append(s.timers, t)
	return t
}

// pending counts the timers neither fired nor stopped.
func (s *manualSched) pending() int {
	n := 0
	for _, t := range s.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// fire runs the pending timers.
func (s *manualSched) fire() {
	ts := s.timers
	s.timers = nil
	for _, t := range ts {
		if !t.stopped {
			t.stopped = true
			t.f()
		}
	}
}

type recorder struct {
	states   []lb.ConnectivityState
	dials    []uint64
	timeouts []time.Duration
}

func (r *recorder) Dial(id uint64, timeout time.Duration) {
	r.dials = append(r.dials, id)
	r.timeouts = append(r.timeouts, timeout)
}
func (r *recorder) SetState(s lb.ConnectivityState, _ error) { r.states = append(r.states, s) }

// TestMachineFollowsTheBackoffDocument runs random event sequences against
// a model written from gRPC's connection-backoff document and gRFC A62's
// SubConn states: Connect acts only when IDLE; a dial's success makes it
// READY and resets the backoff; a failure makes it TRANSIENT_FAILURE for
// min(BaseDelay·Multiplier^n, MaxDelay) and then IDLE; a lost READY
// connection goes IDLE; stale results change nothing; an attempt's timeout
// is max(MinConnectTimeout, the un-jittered delay).
func TestMachineFollowsTheBackoffDocument(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sched := &manualSched{}
		rec := &recorder{}
		bo := backoff.Config{BaseDelay: time.Second, Multiplier: 2, MaxDelay: 5 * time.Second}
		m := New(Config{Scheduler: sched, Backoff: bo, MinConnectTimeout: 3 * time.Second}, rec)
		model := lb.Idle
		failures := 0
		var lastDelay time.Duration
		for i := range rapid.IntRange(1, 60).Draw(t, "steps") {
			_ = i
			cur := m.Attempt()
			id := cur
			if rapid.Bool().Draw(t, "stale") && cur > 0 {
				id = cur - 1
			}
			before := len(rec.states)
			switch ev := rapid.IntRange(0, 5).Draw(t, "event"); ev {
			case 0:
				m.Connect()
				if model == lb.Idle {
					model = lb.Connecting
					want := max(3*time.Second, bo.Delay(failures, nil))
					if got := rec.timeouts[len(rec.timeouts)-1]; got != want {
						t.Fatalf("attempt timeout %v, want %v", got, want)
					}
				}
			case 1:
				ok := m.Connected(id)
				if want := model == lb.Connecting && id == cur; ok != want {
					t.Fatalf("Connected(%d) = %v in %v (current %d)", id, ok, model, cur)
				}
				if ok {
					model, failures = lb.Ready, 0
				}
			case 2:
				d, ok := m.Failed(id, errors.New("refused"))
				if want := model == lb.Connecting && id == cur; ok != want {
					t.Fatalf("Failed(%d) = %v in %v", id, ok, model)
				}
				if ok {
					if want := bo.Delay(failures, nil); d != want {
						t.Fatalf("backoff %v after %d failures, want %v", d, failures, want)
					}
					model, lastDelay = lb.TransientFailure, d
					failures++
				}
			case 3:
				ok := m.Lost(id)
				if want := model == lb.Ready && id == cur; ok != want {
					t.Fatalf("Lost(%d) = %v in %v", id, ok, model)
				}
				if ok {
					model = lb.Idle
					if m.Attempt() == cur {
						t.Fatal("a lost connection's id is still current")
					}
				}
			case 4:
				if model == lb.TransientFailure && len(sched.timers) > 0 && sched.timers[len(sched.timers)-1].d != lastDelay {
					t.Fatalf("backoff timer %v, want %v", sched.timers[len(sched.timers)-1].d, lastDelay)
				}
				sched.fire()
				if model == lb.TransientFailure {
					model = lb.Idle
				}
			case 5:
				if rapid.IntRange(0, 9).Draw(t, "close") == 0 {
					m.Close()
					model = lb.Shutdown
				}
			}
			if m.State() != model {
				t.Fatalf("state %v, model %v", m.State(), model)
			}
			if model != lb.Shutdown && len(rec.states) > before && rec.states[len(rec.states)-1] != model {
				t.Fatalf("owner told %v, state %v", rec.states[len(rec.states)-1], model)
			}
			if model == lb.Shutdown && len(rec.states) > before {
				t.Fatal("a closed machine told its owner of a state")
			}
		}
	})
}

// TestJitterUsesTheRand pins that the delays are drawn with Config.Rand.
func TestJitterUsesTheRand(t *testing.T) {
	bo := backoff.Config{BaseDelay: time.Second, Multiplier: 1, Jitter: 0.5, MaxDelay: time.Second}
	sched := &manualSched{}
	m := New(Config{Scheduler: sched, Backoff: bo, Rand: rand.New(rand.NewPCG(1, 2))}, &recorder{})
	m.Connect()
	d, _ := m.Failed(m.Attempt(), nil)
	if want := bo.Delay(0, rand.New(rand.NewPCG(1, 2))); d != want {
		t.Fatalf("delay %v, want %v", d, want)
	}
}
