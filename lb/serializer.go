package lb

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// ErrSerializerClosed is returned by [Serializer.Run] once the serializer is
// closed.
var ErrSerializerClosed = errors.New("lb: serializer closed")

// Serializer runs callbacks one at a time, in the order they were scheduled,
// and runs timer callbacks the same way: it is the [Scheduler] of one
// balancer tree.
//
// Callbacks run on a goroutine the serializer starts when work arrives and
// that ends when the queue is empty, so an idle serializer holds no
// goroutine and Close leaves none behind.
//
// Timers made with AfterFunc are kept in the serializer, ordered by deadline
// and then by creation; the clock only wakes the serializer, which then runs
// every due timer in that order. So timers due at the same instant run in a
// deterministic order, and Stop called from a callback is final.
//
// All methods are safe for concurrent use, except that Close and Run must
// not be called from inside a callback (they wait for callbacks to finish).
type Serializer struct {
	clock clock.Clock

	mu      sync.Mutex
	queue   []func()
	running bool // a drain goroutine is live
	closed  bool
	timers  timerHeap
	seq     uint64
	changed chan struct{} // closed and cleared when idleness may have changed
	drained sync.WaitGroup
	done    chan struct{} // closed by Close
}

// NewSerializer returns a serializer whose timers run on c; nil means the
// real clock.
func NewSerializer(c clock.Clock) *Serializer {
	if c == nil {
		c = clock.New()
	}
	return &Serializer{clock: c, done: make(chan struct{})}
}

// Schedule queues f to run after every callback queued before it. It never
// blocks and never runs f itself. It returns false, and f never runs, once
// the serializer is closed.
func (s *Serializer) Schedule(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scheduleLocked(f)
}

func (s *Serializer) scheduleLocked(f func()) bool {
	if s.closed {
		return false
	}
	s.queue = append(s.queue, f)
	if !s.running {
		s.running = true
		s.drained.Add(1)
		go s.drain()
	}
	return true
}

func (s *Serializer) drain() {
	defer s.drained.Done()
	for {
		s.mu.Lock()
		if s.closed || len(s.queue) == 0 {
			s.running = false
			s.queue = nil
			s.notifyLocked()
			s.mu.Unlock()
			return
		}
		f := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		f()
	}
}

// Run runs f serialized and waits until it has returned, or until ctx ends.
// It returns [ErrSerializerClosed] if the serializer is closed before f has
// run, or ctx's error; f may still run after ctx ends. Run must not be called
// from inside a callback: it would wait for itself.
func (s *Serializer) Run(ctx context.Context, f func()) error {
	done := make(chan struct{})
	if !s.Schedule(func() { defer close(done); f() }) {
		return ErrSerializerClosed
	}
	select {
	case <-done:
		return nil
	case <-s.done:
		select {
		case <-done: // f ran before Close dropped the queue
			return nil
		default:
			return ErrSerializerClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the serializer: queued callbacks that have not started are
// dropped, pending timers are stopped, and Schedule returns false from now
// on. Close waits for a running callback to finish, so no goroutine of the
// serializer is left when it returns. Calling Close again does nothing.
func (s *Serializer) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	for _, t := range s.timers {
		t.stopClockLocked()
		t.index = -1
	}
	s.timers = nil
	s.notifyLocked()
	s.mu.Unlock()
	s.drained.Wait()
}

// AfterFunc runs f, serialized, once d has passed on the serializer's clock.
// A d of zero or less runs f as soon as the queue allows. After Close it
// returns a stopped timer.
//
// The deadline is read from the clock once, here, and is the timer's only
// authority: the clock timer made beside it merely wakes the serializer.
// If the clock moves between the two (a mock clock advanced by another
// goroutine), the wake-up comes late, and [Serializer.WaitIdle] runs the
// due timer itself; so a timer is never lost to the two steps.
func (s *Serializer) AfterFunc(d time.Duration, f func()) Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &serialTimer{s: s, f: f, deadline: s.clock.Now().Add(d), seq: s.seq, index: -1}
	s.seq++
	if s.closed {
		return t
	}
	heap.Push(&s.timers, t)
	s.notifyLocked()
	if d <= 0 {
		s.scheduleLocked(s.runDueTimers)
	} else {
		t.clockTimer = s.clock.AfterFunc(d, func() { s.Schedule(s.runDueTimers) })
	}
	return t
}

// runDueTimers runs, in deadline order, every timer whose deadline has
// passed. It runs inside the serializer.
func (s *Serializer) runDueTimers() {
	for {
		s.mu.Lock()
		if len(s.timers) == 0 || s.timers[0].deadline.After(s.clock.Now()) {
			s.mu.Unlock()
			return
		}
		t := heap.Pop(&s.timers).(*serialTimer)
		s.notifyLocked()
		s.mu.Unlock()
		t.f()
	}
}

// NextDeadline returns the earliest deadline among pending timers, and false
// when there is none. Test harnesses use it to advance a mock clock one
// deadline at a time.
func (s *Serializer) NextDeadline() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.timers) == 0 {
		return time.Time{}, false
	}
	return s.timers[0].deadline, true
}

// WaitIdle waits until no callback is queued or running and no pending timer
// is due at or before until, or until ctx ends (returning its error). After
// a mock clock has been advanced to until, WaitIdle returns once every timer
// that fired has run its callback and all their consequences inside the
// serializer have finished.
func (s *Serializer) WaitIdle(ctx context.Context, until time.Time) error {
	for {
		s.mu.Lock()
		idle := s.closed || (!s.running && len(s.queue) == 0 &&
			(len(s.timers) == 0 || s.timers[0].deadline.After(until)))
		if idle {
			s.mu.Unlock()
			return nil
		}
		if !s.running && len(s.timers) > 0 && !s.timers[0].deadline.After(s.clock.Now()) {
			// Due by the clock, but its wake-up has not come (see
			// AfterFunc): run it now rather than wait for a wake-up
			// that may be due later than the deadline.
			s.scheduleLocked(s.runDueTimers)
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Serializer) notifyLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

type serialTimer struct {
	s          *Serializer
	f          func()
	deadline   time.Time
	seq        uint64
	index      int // position in s.timers; -1 when not pending
	clockTimer *clock.Timer
}

func (t *serialTimer) Stop() bool {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&s.timers, t.index)
	t.stopClockLocked()
	s.notifyLocked()
	return true
}

func (t *serialTimer) stopClockLocked() {
	if t.clockTimer != nil {
		t.clockTimer.Stop()
	}
}

// timerHeap orders pending timers by deadline, then creation.
type timerHeap []*serialTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].deadline.Equal(h[j].deadline) {
		return h[i].deadline.Before(h[j].deadline)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*serialTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
