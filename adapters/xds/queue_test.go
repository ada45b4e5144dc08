package xds

import (
	"slices"
	"sync"
	"testing"
)

// TestCallbackQueueKeepsOrderAndCoalescesValues: callbacks run in order;
// a value queued behind another still waiting for the same watcher
// replaces it, but not across another callback of that watcher.
func TestCallbackQueueKeepsOrderAndCoalescesValues(t *testing.T) {
	q := newCallbackQueue()
	defer q.close()
	a, b := &subscription{}, &subscription{}
	var mu sync.Mutex
	var got []string
	record := func(s string) func() {
		return func() {
			mu.Lock()
			got = append(got, s)
			mu.Unlock()
		}
	}
	// Hold the queue's goroutine so that everything below is pending.
	hold, release := make(chan struct{}), make(chan struct{})
	q.push(a, func() { close(hold); <-release })
	<-hold
	q.pushUpdate(a, record("a1"))
	q.pushUpdate(b, record("b1"))
	q.pushUpdate(a, record("a2")) // replaces a1
	q.push(a, record("a-err"))
	q.pushUpdate(a, record("a3")) // after the error: kept
	q.pushUpdate(a, record("a4")) // replaces a3
	done := make(chan struct{})
	q.push(b, func() { close(done) })
	close(release)
	<-done
	want := []string{"a2", "b1", "a-err", "a4"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
}
