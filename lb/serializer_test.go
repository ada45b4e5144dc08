package lb_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
)

// guard bounds waits in these tests; it only turns a hang into a failure.
func guard(t interface{ Cleanup(func()) }) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Property: callbacks scheduled from several goroutines run one at a time,
// each goroutine's in its scheduling order, callbacks scheduled from inside
// a callback run after it, and Close leaves no goroutine behind.
func TestPropertySerializerOrderAndExclusion(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := lb.NewSerializer(clock.NewMock())
		producers := rapid.IntRange(1, 4).Draw(rt, "producers")
		perProducer := rapid.IntRange(0, 30).Draw(rt, "perProducer")
		var (
			running atomic.Int32
			mu      sync.Mutex
			seen    = make([][]int, producers)
			nested  []int
			wg      sync.WaitGroup
		)
		for p := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perProducer {
					s.Schedule(func() {
						if running.Add(1) != 1 {
							rt.Errorf("two callbacks ran at once")
						}
						mu.Lock()
						seen[p] = append(seen[p], i)
						mu.Unlock()
						if i%7 == 0 {
							s.Schedule(func() { // re-entrant: must not deadlock
								mu.Lock()
								nested = append(nested, i)
								mu.Unlock()
							})
						}
						running.Add(-1)
					})
				}
			}()
		}
		wg.Wait()
		if err := s.WaitIdle(guard(rt), time.Time{}); err != nil {
			rt.Fatalf("WaitIdle: %v", err)
		}
		for p := range producers {
			want := make([]int, perProducer)
			for i := range want {
				want[i] = i
			}
			if !slices.Equal(seen[p], want) {
				rt.Fatalf("producer %d ran %v, want %v", p, seen[p], want)
			}
		}
		if wantNested := producers * ((perProducer + 6) / 7); len(nested) != wantNested {
			rt.Fatalf("%d nested callbacks ran, want %d", len(nested), wantNested)
		}
		s.Close()
		if s.Schedule(func() { rt.Errorf("ran after Close") }) {
			rt.Fatalf("Schedule after Close returned true")
		}
	})
	// No serializer goroutine may be left: each Close waited for its drain.
	if err := goleak.Find(); err != nil {
		t.Fatalf("goroutines left after Close: %v", err)
	}
}

func TestSerializerRun(t *testing.T) {
	s := lb.NewSerializer(nil)
	ran := false
	if err := s.Run(guard(t), func() { ran = true }); err != nil || !ran {
		t.Fatalf("Run = %v, ran %v", err, ran)
	}
	s.Close()
	s.Close() // idempotent
	if err := s.Run(guard(t), func() {}); !errors.Is(err, lb.ErrSerializerClosed) {
		t.Fatalf("Run after Close = %v, want ErrSerializerClosed", err)
	}
}

// Close drops callbacks that have not started and waits for the running
// one; a Run waiting on a dropped callback returns ErrSerializerClosed.
func TestSerializerCloseDropsQueued(t *testing.T) {
	s := lb.NewSerializer(nil)
	release := make(chan struct{})
	started := make(chan struct{})
	s.Schedule(func() { close(started); <-release })
	<-started
	dropped := atomic.Bool{}
	s.Schedule(func() { dropped.Store(true) })
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(context.Background(), func() {}) }()
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	if err := <-runErr; !errors.Is(err, lb.ErrSerializerClosed) {
		t.Errorf("Run of a dropped callback = %v, want ErrSerializerClosed", err)
	}
	close(release)
	<-closed
	if dropped.Load() {
		t.Errorf("a queued callback ran after Close")
	}
}

// advance advances the mock clock to t and waits for every due timer.
func advance(t *testing.T, m *clock.Mock, s *lb.Serializer, d time.Duration) {
	t.Helper()
	m.Add(d)
	if err := s.WaitIdle(guard(t), m.Now()); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
}

func TestSerializerTimers(t *testing.T) {
	m := clock.NewMock()
	s := lb.NewSerializer(m)
	defer s.Close()
	var order []string
	s.Run(guard(t), func() {
		s.AfterFunc(2*time.Second, func() { order = append(order, "b") })
		s.AfterFunc(time.Second, func() { order = append(order, "a") })
		// Same deadline as "b": runs after it, in creation order.
		s.AfterFunc(2*time.Second, func() { order = append(order, "c") })
		stopped := s.AfterFunc(time.Second, func() { order = append(order, "stopped") })
		if !stopped.Stop() || stopped.Stop() {
			t.Errorf("Stop: want true then false")
		}
	})
	if d, ok := s.NextDeadline(); !ok || !d.Equal(m.Now().Add(time.Second)) {
		t.Fatalf("NextDeadline = %v, %v", d, ok)
	}
	advance(t, m, s, time.Second-time.Nanosecond)
	if len(order) != 0 {
		t.Fatalf("fired early: %v", order)
	}
	advance(t, m, s, time.Nanosecond)
	if !slices.Equal(order, []string{"a"}) {
		t.Fatalf("after 1s: %v, want [a]", order)
	}
	advance(t, m, s, time.Second)
	if !slices.Equal(order, []string{"a", "b", "c"}) {
		t.Fatalf("after 2s: %v, want [a b c]", order)
	}
	if _, ok := s.NextDeadline(); ok {
		t.Fatalf("timers still pending")
	}
}

// A timer stopped from inside the serializer after its clock fired (its
// callback already queued) does not run: Stop inside the serializer is
// final.
func TestSerializerStopAfterFireIsFinal(t *testing.T) {
	m := clock.NewMock()
	s := lb.NewSerializer(m)
	defer s.Close()
	var fired atomic.Bool
	var tm lb.Timer
	block := make(chan struct{})
	s.Run(guard(t), func() { tm = s.AfterFunc(time.Second, func() { fired.Store(true) }) })
	// Occupy the serializer, queue the Stop, then fire the clock: its
	// wake-up queues behind the Stop, as when a balancer call stops a timer
	// that fired a moment before.
	s.Schedule(func() { <-block })
	s.Schedule(func() {
		if !tm.Stop() {
			t.Errorf("Stop after the clock fired but before the callback ran = false, want true")
		}
	})
	m.Add(time.Second)
	close(block)
	if err := s.WaitIdle(guard(t), m.Now()); err != nil {
		t.Fatal(err)
	}
	if fired.Load() {
		t.Fatalf("a stopped timer's callback ran")
	}
}

func TestSerializerZeroDelayTimerAndClose(t *testing.T) {
	m := clock.NewMock()
	s := lb.NewSerializer(m)
	var fired atomic.Bool
	s.Run(guard(t), func() { s.AfterFunc(0, func() { fired.Store(true) }) })
	if err := s.WaitIdle(guard(t), m.Now()); err != nil || !fired.Load() {
		t.Fatalf("zero-delay timer: fired %v, %v", fired.Load(), err)
	}
	s.Run(guard(t), func() { s.AfterFunc(time.Hour, func() { t.Errorf("fired after Close") }) })
	s.Close()
	if _, ok := s.NextDeadline(); ok {
		t.Errorf("Close left timers pending")
	}
	m.Add(2 * time.Hour)
	if tm := s.AfterFunc(time.Second, func() {}); tm.Stop() {
		t.Errorf("timer made after Close was pending")
	}
}

// skewClock is a mock clock that moves forward by skew between the moment
// a caller reads the time and the moment it makes a timer: the race of two
// goroutines, one advancing a mock clock, one scheduling.
type skewClock struct {
	*clock.Mock
	skew time.Duration
}

func (c skewClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	c.Mock.Add(c.skew)
	return c.Mock.AfterFunc(d, f)
}

// A timer whose clock wake-up was made after the clock moved still runs at
// its deadline: WaitIdle runs it instead of waiting for the late wake-up.
func TestSerializerTimerSurvivesClockMovingWhileScheduled(t *testing.T) {
	m := clock.NewMock()
	s := lb.NewSerializer(skewClock{Mock: m, skew: time.Second})
	defer s.Close()
	start := m.Now()
	var ran atomic.Bool
	if err := s.Run(guard(t), func() { s.AfterFunc(5*time.Second, func() { ran.Store(true) }) }); err != nil {
		t.Fatal(err)
	}
	deadline, ok := s.NextDeadline()
	if !ok || !deadline.Equal(start.Add(5*time.Second)) {
		t.Fatalf("NextDeadline() = %v, %v; want %v", deadline, ok, start.Add(5*time.Second))
	}
	m.Set(deadline) // the clock's own wake-up is due a second later
	if err := s.WaitIdle(guard(t), m.Now()); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
	if !ran.Load() {
		t.Fatal("timer did not run at its deadline")
	}
}
