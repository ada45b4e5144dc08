package connstate

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"pgregory.net/rapid"
)

// vsched is an lb.Scheduler in virtual time: step runs the pending timer
// with the earliest deadline, ties in creation order, as lb.Serializer
// does.
type vsched struct {
	now    time.Duration
	seq    int
	timers []*vtimer
}

type vtimer struct {
	at   time.Duration
	seq  int
	f    func()
	done bool
}

func (t *vtimer) Stop() bool { was := !t.done; t.done = true; return was }

func (s *vsched) Schedule(f func()) bool { s.AfterFunc(0, f); return true }
func (s *vsched) AfterFunc(d time.Duration, f func()) lb.Timer {
	s.seq++
	t := &vtimer{at: s.now + d, seq: s.seq, f: f}
	s.timers = append(s.timers, t)
	return t
}

// deadlines returns the pending timers' deadlines, sorted.
func (s *vsched) deadlines() []time.Duration {
	var ds []time.Duration
	for _, t := range s.timers {
		if !t.done {
			ds = append(ds, t.at)
		}
	}
	slices.Sort(ds)
	return ds
}

// step moves the time to the earliest pending timer and runs it; false if
// none is pending.
func (s *vsched) step() bool {
	var next *vtimer
	for _, t := range s.timers {
		if !t.done && (next == nil || t.at < next.at || (t.at == next.at && t.seq < next.seq)) {
			next = t
		}
	}
	if next == nil {
		return false
	}
	s.now, next.done = next.at, true
	next.f()
	return true
}

// probeOwner is the I/O side of both the machine and its Health.
type probeOwner struct {
	recorder
	healthRec
}

// probeModel is the model of a machine with health checking, written from
// issue 27's text ("a backend in connection backoff is still probed at the
// health-check interval, and a passing probe ends its backoff") and gRFC
// A17 (checks while READY, one at a time, each bounded by its timeout, the
// next one an interval after an answer). A deadline of -1 is no timer; seq
// orders timers made at the same instant, as the scheduler does.
type probeModel struct {
	state     lb.ConnectivityState
	failures  int
	healthOn  bool
	inFlight  bool
	deadlines [3]time.Duration // backoff, next check, check timeout
	seqs      [3]int
	seq       int
}

const (
	tBackoff = iota
	tNextCheck
	tCheckTimeout
)

func (p *probeModel) set(which int, at time.Duration) {
	p.seq++
	p.deadlines[which], p.seqs[which] = at, p.seq
}

// enter moves to s and restarts the checks s calls for.
func (p *probeModel) enter(s lb.ConnectivityState, now, interval, timeout time.Duration) {
	p.state = s
	p.restartHealth(now, interval, timeout)
}

func (p *probeModel) restartHealth(now, interval, timeout time.Duration) {
	p.inFlight = false
	p.deadlines[tNextCheck], p.deadlines[tCheckTimeout] = -1, -1
	if !p.healthOn {
		return
	}
	switch p.state {
	case lb.Ready: // A17: the first check at once
		p.inFlight = true
		p.set(tCheckTimeout, now+timeout)
	case lb.TransientFailure: // the first probe one interval in
		p.set(tNextCheck, now+interval)
	}
}

// answered applies the answer to the check in flight.
func (p *probeModel) answered(pass bool, now, interval, timeout time.Duration) {
	p.inFlight = false
	p.deadlines[tCheckTimeout] = -1
	if p.state == lb.TransientFailure && pass {
		p.deadlines[tBackoff] = -1 // a passing probe ends the backoff
		p.enter(lb.Idle, now, interval, timeout)
		return
	}
	p.set(tNextCheck, now+interval)
}

func (p *probeModel) pending() []time.Duration {
	var ds []time.Duration
	for _, d := range p.deadlines {
		if d >= 0 {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	return ds
}

// earliest returns the model's timer due first.
func (p *probeModel) earliest() int {
	best := -1
	for i, d := range p.deadlines {
		if d >= 0 && (best < 0 || d < p.deadlines[best] || (d == p.deadlines[best] && p.seqs[i] < p.seqs[best])) {
			best = i
		}
	}
	return best
}

// TestMachineProbesDuringBackoff runs random event sequences (dials'
// results, lost connections, check answers and timeouts, health checking
// turned on and off, the clock moved to the next deadline) against
// probeModel: while TRANSIENT_FAILURE with health checking on, a probe
// starts one interval after the failure and one interval after each failed
// answer or timeout; a passing probe ends the backoff at once (IDLE, the
// failures still counted in the next attempt's timeout); while READY, A17
// checks run from the first instant; in other states nothing is checked;
// an answer that the backend does not implement checks passes a probe and
// ends READY's checks (A17); stale answers change nothing.
func TestMachineProbesDuringBackoff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sched := &vsched{}
		own := &probeOwner{}
		bo := backoff.Config{BaseDelay: time.Second, Multiplier: 2, MaxDelay: 8 * time.Second}
		const minConnect = 3 * time.Second
		set := HealthSettings{Interval: rapid.SampledFrom([]time.Duration{
			300 * time.Millisecond, time.Second, 5 * time.Second}).Draw(t, "interval"),
			Timeout: 70 * time.Millisecond, UnhealthyThreshold: 2, HealthyThreshold: 2}
		m := New(Config{Scheduler: sched, Backoff: bo, MinConnectTimeout: minConnect}, &own.recorder)
		h := NewHealth(sched, nil, &own.healthRec)
		model := &probeModel{state: lb.Idle, deadlines: [3]time.Duration{-1, -1, -1}}
		if rapid.Bool().Draw(t, "healthAtStart") {
			m.SetHealth(h, &set)
			model.healthOn = true
		}
		enter := func(s lb.ConnectivityState) { model.enter(s, sched.now, set.Interval, set.Timeout) }
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			cur := m.Attempt()
			id := cur
			if cur > 0 && rapid.IntRange(0, 4).Draw(t, "staleDial") == 0 {
				id = cur - 1
			}
			live := id == cur
			switch ev := rapid.IntRange(0, 7).Draw(t, "event"); ev {
			case 0:
				m.Connect()
				if model.state == lb.Idle {
					enter(lb.Connecting)
					want := max(minConnect, bo.Delay(model.failures, nil))
					if got := own.timeouts[len(own.timeouts)-1]; got != want {
						t.Fatalf("attempt timeout %v after %d failures, want %v", got, model.failures, want)
					}
				}
			case 1:
				if m.Connected(id) {
					if model.state != lb.Connecting || !live {
						t.Fatalf("Connected(%d) applied in %v (current %d)", id, model.state, cur)
					}
					model.failures = 0
					enter(lb.Ready)
				}
			case 2:
				if d, ok := m.Failed(id, errors.New("refused")); ok {
					if model.state != lb.Connecting || !live {
						t.Fatalf("Failed(%d) applied in %v (current %d)", id, model.state, cur)
					}
					if want := bo.Delay(model.failures, nil); d != want {
						t.Fatalf("backoff %v after %d failures, want %v", d, model.failures, want)
					}
					model.failures++
					enter(lb.TransientFailure)
					model.set(tBackoff, sched.now+d)
				}
			case 3:
				if m.Lost(id) {
					if model.state != lb.Ready || !live {
						t.Fatalf("Lost(%d) applied in %v (current %d)", id, model.state, cur)
					}
					enter(lb.Idle)
				}
			case 4: // the clock moves to the next deadline
				which := model.earliest()
				if !sched.step() {
					if which >= 0 {
						t.Fatalf("no timer pending, the model expects %v", model.pending())
					}
					break
				}
				if which < 0 || model.deadlines[which] != sched.now {
					t.Fatalf("a timer fired at %v; the model expects %v", sched.now, model.pending())
				}
				model.deadlines[which] = -1
				switch which {
				case tBackoff:
					if model.state == lb.TransientFailure {
						enter(lb.Idle)
					}
				case tNextCheck:
					model.inFlight = true
					model.set(tCheckTimeout, sched.now+set.Timeout)
				case tCheckTimeout:
					model.answered(false, sched.now, set.Interval, set.Timeout)
				}
			case 5: // an answer to the check in flight, or a stale one
				cid := own.lastStart
				stale := rapid.IntRange(0, 4).Draw(t, "staleCheck") == 0
				if stale {
					cid--
				}
				want := model.inFlight && !stale
				if rapid.IntRange(0, 5).Draw(t, "unimplemented") == 0 {
					// A17: passing, and no further check while READY; a
					// probe that finds it passes.
					if applied := h.Unimplemented(cid, errors.New("unimplemented")); applied != want {
						t.Fatalf("Unimplemented(%d) applied %v, want %v (in %v)", cid, applied, want, model.state)
					}
					if want {
						ready := model.state == lb.Ready
						model.answered(true, sched.now, set.Interval, set.Timeout)
						if ready {
							model.deadlines[tNextCheck] = -1
						}
					}
					break
				}
				pass := rapid.Bool().Draw(t, "pass")
				var err error
				if !pass {
					err = errors.New("down")
				}
				if applied := h.Result(cid, err); applied != want {
					t.Fatalf("Result(%d) applied %v, want %v (in %v)", cid, applied, want, model.state)
				}
				if want {
					model.answered(pass, sched.now, set.Interval, set.Timeout)
				}
			case 6: // health checking turned on (again) or off
				if rapid.Bool().Draw(t, "on") {
					m.SetHealth(h, &set)
					model.healthOn = true
				} else {
					m.SetHealth(nil, nil)
					model.healthOn = false
				}
				model.restartHealth(sched.now, set.Interval, set.Timeout)
			case 7:
				if rapid.IntRange(0, 9).Draw(t, "close") == 0 {
					m.Close()
					model.state = lb.Shutdown
					model.inFlight = false
					model.deadlines = [3]time.Duration{-1, -1, -1}
				}
			}
			if m.State() != model.state {
				t.Fatalf("state %v, model %v", m.State(), model.state)
			}
			if got, want := sched.deadlines(), model.pending(); !slices.Equal(got, want) {
				t.Fatalf("at %v in %v: timers due at %v, model %v", sched.now, model.state, got, want)
			}
			if own.inFlight != model.inFlight {
				t.Fatalf("check in flight %v, model %v (in %v)", own.inFlight, model.inFlight, model.state)
			}
			if n := len(own.states); model.state != lb.Shutdown && n > 0 && own.states[n-1] != model.state {
				t.Fatalf("owner told %v, state %v", own.states[n-1], model.state)
			}
		}
	})
}

// TestPassingProbeEndsTheBackoff pins the rule on its own: a probe one
// interval after a failure, while the backoff has minutes to run, passes,
// and the machine is IDLE at once; the next attempt's timeout still counts
// the failures.
func TestPassingProbeEndsTheBackoff(t *testing.T) {
	sched := &vsched{}
	own := &probeOwner{}
	bo := backoff.Config{BaseDelay: 2 * time.Minute, Multiplier: 2, MaxDelay: 10 * time.Minute}
	m := New(Config{Scheduler: sched, Backoff: bo, MinConnectTimeout: time.Second}, &own.recorder)
	h := NewHealth(sched, nil, &own.healthRec)
	m.SetHealth(h, &HealthSettings{Interval: time.Second, Timeout: 100 * time.Millisecond})
	m.Connect()
	m.Failed(m.Attempt(), errors.New("refused"))
	if !sched.step() || sched.now != time.Second || !own.inFlight {
		t.Fatalf("at %v: probe in flight %v, want one started at 1s", sched.now, own.inFlight)
	}
	if !h.Result(own.lastStart, nil) {
		t.Fatal("the probe's pass was not applied")
	}
	if m.State() != lb.Idle {
		t.Fatalf("state %v after a passing probe, want IDLE", m.State())
	}
	if got := sched.deadlines(); len(got) != 0 {
		t.Fatalf("timers still pending at %v: %v (the backoff must have stopped)", sched.now, got)
	}
	m.Connect()
	if got := own.timeouts[len(own.timeouts)-1]; got != 4*time.Minute {
		t.Fatalf("next attempt's timeout %v, want 4m (one failure counted)", got)
	}
}
