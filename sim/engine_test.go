package sim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEventsRunInTimeThenPushOrder(t *testing.T) {
	var e engine
	var got []int
	add := func(at time.Duration, n int) { e.at(at, evFunc, 0, func() { got = append(got, n) }) }
	add(3, 4)
	add(1, 1)
	add(2, 2)
	add(2, 3)
	add(5, 5)
	drain(&e)
	if !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("order %v, want [1 2 3 4 5]", got)
	}
}

// drain runs every event of e, which must all be the scheduler's.
func drain(e *engine) {
	for len(e.heap) > 0 {
		ev := e.next()
		ev.runScheduled()
	}
}

// A timer's Stop is final, and a stopped timer's event does nothing; a
// zero or negative delay runs after the work already due now.
func TestSchedulerTimers(t *testing.T) {
	var e engine
	s := scheduler{&e}
	var ran []string
	t1 := s.AfterFunc(time.Second, func() { ran = append(ran, "t1") })
	s.AfterFunc(time.Second, func() { ran = append(ran, "t2") })
	s.Schedule(func() { ran = append(ran, "now") })
	s.AfterFunc(-time.Second, func() { ran = append(ran, "negative") })
	if !t1.Stop() || t1.Stop() {
		t.Fatal("Stop: want true once, then false")
	}
	drain(&e)
	if got := strings.Join(ran, ","); got != "now,negative,t2" {
		t.Fatalf("ran %s, want now,negative,t2", got)
	}
	if e.now != time.Second {
		t.Fatalf("virtual time %v after the last timer, want 1s", e.now)
	}
}
