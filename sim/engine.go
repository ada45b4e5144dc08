package sim

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
)

// kind says what an event does when it fires.
type kind uint8

const (
	evFunc     kind = iota // ref is a func(): scheduled work, a fault's action
	evTimer                // ref is a *timer made by scheduler.AfterFunc
	evArrival              // ref is the *client whose next open-loop request arrives
	evComplete             // ref is the *backend finishing attempt id of r
	evTimeout              // ref is the *client whose earliest deadline is due
	evConnect              // ref is the *subConn whose connection attempt ends
	evSend                 // ref is the *attempt reaching its backend after half the rtt; id 1 if measured
	evReply                // ref is the *attempt whose answer reaches its client after half the rtt; id 1 if it failed
)

// event is one entry of the engine's heap, ordered by (at, seq). key
// holds seq in its high 56 bits and the kind in its low 8: comparing keys
// compares seqs, which are unique. At 40 bytes, four events share a
// little over two cache lines.
type event struct {
	at  time.Duration
	key uint64
	id  uint64
	ref any
}

func (ev *event) kind() kind { return kind(ev.key & 0xff) }

// engine is the virtual-time core: a 4-ary heap of events ordered by time
// and then by the order they were pushed, so that a run is a pure function
// of its inputs. It runs on one goroutine and has no lock.
type engine struct {
	now  time.Duration
	seq  uint64
	heap []event
}

// at pushes an event of kind k at time t (never before now).
func (e *engine) at(t time.Duration, k kind, id uint64, ref any) {
	e.seq++
	e.heap = append(e.heap, event{})
	e.up(len(e.heap)-1, event{at: max(t, e.now), key: e.seq<<8 | uint64(k), id: id, ref: ref})
}

// up places ev at the hole i or above it, moving its ancestors down.
func (e *engine) up(i int, ev event) {
	h := e.heap
	for i > 0 {
		p := (i - 1) / 4
		if !before(&ev, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = ev
}

// pop removes and returns the earliest event; the heap must not be empty.
// It is Floyd's deletion: the hole left at the root goes down to a leaf
// along the earliest children, then the last event fills it from there
// upwards. The last event is a late one, so it seldom climbs, and the
// descent makes three comparisons a level instead of four.
func (e *engine) pop() event {
	h := e.heap
	top := h[0]
	last := len(h) - 1
	x := h[last]
	h[last] = event{}
	e.heap = h[:last]
	if last > 0 {
		hole := 0
		for first := 1; first < last; first = 4*hole + 1 {
			m := first
			for j := first + 1; j < min(first+4, last); j++ {
				if before(&h[j], &h[m]) {
					m = j
				}
			}
			h[hole] = h[m]
			hole = m
		}
		e.up(hole, x)
	}
	return top
}

// next pops the earliest event and moves the time to it.
func (e *engine) next() event {
	ev := e.pop()
	e.now = ev.at
	return ev
}

// runScheduled runs an event of the tree's scheduler: Schedule'd work or a
// timer (unless stopped).
func (ev *event) runScheduled() {
	if ev.kind() == evTimer {
		ev.ref.(*timer).fire()
	} else {
		ev.ref.(func())()
	}
}

func before(a, b *event) bool {
	return a.at < b.at || (a.at == b.at && a.key < b.key)
}

// epoch is the wall-clock reading of virtual time zero, as policies see it
// through [lb.BuildOptions].Clock.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// contractError is what the virtual clock panics with when a policy waits on
// the clock instead of making its timers with [lb.Scheduler]; Run recovers
// it into an error.
type contractError struct{ method string }

func (e contractError) Error() string {
	return "sim: a policy called Clock." + e.method + "; in the simulator, as lb/doc.go asks, timers are made with lb.Scheduler.AfterFunc and the clock is only read"
}

// vclock is the engine's time as a [clock.Clock]: Now, Since and Until read
// virtual time; the methods that wait panic with a contractError.
type vclock struct{ e *engine }

var _ clock.Clock = vclock{}

func (c vclock) Now() time.Time                  { return epoch.Add(c.e.now) }
func (c vclock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c vclock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }
func (vclock) After(time.Duration) <-chan time.Time {
	panic(contractError{"After"})
}
func (vclock) AfterFunc(time.Duration, func()) *clock.Timer {
	panic(contractError{"AfterFunc"})
}
func (vclock) Sleep(time.Duration)                 { panic(contractError{"Sleep"}) }
func (vclock) Tick(time.Duration) <-chan time.Time { panic(contractError{"Tick"}) }
func (vclock) Ticker(time.Duration) *clock.Ticker  { panic(contractError{"Ticker"}) }
func (vclock) Timer(time.Duration) *clock.Timer    { panic(contractError{"Timer"}) }
func (vclock) WithDeadline(context.Context, time.Time) (context.Context, context.CancelFunc) {
	panic(contractError{"WithDeadline"})
}
func (vclock) WithTimeout(context.Context, time.Duration) (context.Context, context.CancelFunc) {
	panic(contractError{"WithTimeout"})
}

// scheduler is one tree's [lb.Scheduler] on the engine: Schedule'd work and
// timers are events, run by the engine's loop one at a time.
type scheduler struct{ e *engine }

var _ lb.Scheduler = scheduler{}

// Schedule runs f as an event at the current time, after every event
// already due now.
func (s scheduler) Schedule(f func()) bool {
	s.e.at(s.e.now, evFunc, 0, f)
	return true
}

// AfterFunc runs f as an event once d has passed in virtual time.
func (s scheduler) AfterFunc(d time.Duration, f func()) lb.Timer {
	t := &timer{f: f}
	s.e.at(s.e.now+max(d, 0), evTimer, 0, t)
	return t
}

// timer is a timer of [scheduler.AfterFunc]. Stop is final: an event whose
// timer is stopped does nothing.
type timer struct {
	f    func()
	done bool // fired or stopped
}

// Stop cancels the timer; false if it already fired or was stopped.
func (t *timer) Stop() bool {
	if t.done {
		return false
	}
	t.done = true
	return true
}

// fire runs the timer's callback unless it was stopped.
func (t *timer) fire() {
	if !t.done {
		t.done = true
		t.f()
	}
}
