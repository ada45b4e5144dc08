package lbtest

import (
	"context"
	"sync"
)

// Queue is an unbounded, ordered queue of recorded events. Nothing pushed is
// ever dropped. It is safe for concurrent use.
type Queue[T any] struct {
	mu     sync.Mutex
	items  []T
	read   int
	pushed signal
}

// signal wakes the goroutines waiting for a change of state guarded by a
// mutex. The zero value is ready to use; its methods are called with that
// mutex held.
type signal struct{ ch chan struct{} }

// broadcast wakes every goroutine waiting in wait.
func (s *signal) broadcast() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// wait unlocks mu, waits for the next broadcast or for ctx to end, and
// returns ctx's error if it ended first. It returns with mu unlocked.
func (s *signal) wait(ctx context.Context, mu *sync.Mutex) error {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	ch := s.ch
	mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *Queue[T]) push(v T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, v)
	q.pushed.broadcast()
}

// Receive returns the oldest event not yet received, waiting for one until
// ctx ends.
func (q *Queue[T]) Receive(ctx context.Context) (T, error) {
	for {
		q.mu.Lock()
		if q.read < len(q.items) {
			v := q.items[q.read]
			q.read++
			q.mu.Unlock()
			return v, nil
		}
		if err := q.pushed.wait(ctx, &q.mu); err != nil {
			var zero T
			return zero, err
		}
	}
}

// TryReceive returns the oldest event not yet received and true, or false at
// once if there is none.
func (q *Queue[T]) TryReceive() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.read < len(q.items) {
		v := q.items[q.read]
		q.read++
		return v, true
	}
	var zero T
	return zero, false
}

// Drain receives and returns every event not yet received.
func (q *Queue[T]) Drain() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := append([]T(nil), q.items[q.read:]...)
	q.read = len(q.items)
	return out
}

// Peek returns the events not received yet, without receiving them.
func (q *Queue[T]) Peek() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]T(nil), q.items[q.read:]...)
}

// Pending returns how many events have not been received yet.
func (q *Queue[T]) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.read
}

// All returns every event ever pushed, received or not.
func (q *Queue[T]) All() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]T(nil), q.items...)
}

// Last returns the newest event ever pushed and true, or false if none was.
// It does not receive anything.
func (q *Queue[T]) Last() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		var zero T
		return zero, false
	}
	return q.items[len(q.items)-1], true
}
