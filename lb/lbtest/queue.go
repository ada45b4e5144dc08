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
	signal chan struct{} // closed and cleared on push
}

func (q *Queue[T]) push(v T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, v)
	if q.signal != nil {
		close(q.signal)
		q.signal = nil
	}
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
		if q.signal == nil {
			q.signal = make(chan struct{})
		}
		ch := q.signal
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
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
