// Package runloop is the goroutine of a resolver that resolves on its own
// schedule (the dns and eds resolvers): ResolveNow requests that coalesce,
// waits on the injected clock, blocking I/O that Close never waits for,
// and a Close that returns promptly whatever the I/O is doing.
//
// # The contract it keeps
//
// [resolver.Resolver] requires Close to return promptly. A Loop's Close
// cancels the loop's context and waits for the loop function to return;
// the loop function in turn never blocks except in [Loop.Wait], [Loop.Sleep],
// [Loop.WaitResolveNow] and [Do], all of which return as soon as Close is
// called. Work that may block without end (reading a file on a hung
// network mount, a lookup function that ignores its context) runs through
// [Do] on a goroutine of its own: when Close comes first, that goroutine is
// left to finish by itself and its result is dropped, so no later call
// reaches the ClientConn.
//
// # Timers
//
// Each timer is made with one clock operation (clock.Timer(d)), never by
// reading the clock and then scheduling: on a mock clock advanced by
// another goroutine, the time could move between the two steps and a wake-up
// would be lost.
//
// [resolver.Resolver]: https://pkg.go.dev/github.com/lbkit/lbkit/lb/resolver#Resolver
package runloop

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
)

// Loop runs one resolver's loop function on its own goroutine. Create it
// with [Start]. ResolveNow and Close are safe from any goroutine; the other
// methods are for the loop function only.
type Loop struct {
	clock      clock.Clock
	resolveNow chan struct{} // at most one pending request
	ctx        context.Context
	cancel     context.CancelFunc
	done       chan struct{} // closed when the loop function returns
}

// Start runs run(l) on a new goroutine and returns l. run should return
// when [Loop.Closed] reports true or a wait reports the loop closed.
func Start(clk clock.Clock, run func(l *Loop)) *Loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{
		clock:      clk,
		resolveNow: make(chan struct{}, 1),
		ctx:        ctx,
		cancel:     cancel,
		done:       make(chan struct{}),
	}
	go func() {
		defer close(l.done)
		run(l)
	}()
	return l
}

// ResolveNow records a request for a resolution; requests made before the
// loop takes one coalesce into it. It never blocks.
func (l *Loop) ResolveNow() {
	select {
	case l.resolveNow <- struct{}{}:
	default: // one is pending already
	}
}

// Close cancels the loop's context and waits for the loop function to
// return. It never waits for work started with [Do]. Calling it again does
// nothing more.
func (l *Loop) Close() {
	l.cancel()
	<-l.done
}

// Context is cancelled by Close. Blocking work given to [Do] should honour
// it.
func (l *Loop) Context() context.Context { return l.ctx }

// Closed reports whether Close has been called.
func (l *Loop) Closed() bool { return l.ctx.Err() != nil }

// ForgetResolveNow drops a pending ResolveNow request: the resolution about
// to start answers it.
func (l *Loop) ForgetResolveNow() {
	select {
	case <-l.resolveNow:
	default:
	}
}

// Timer returns a timer that fires d from now on the loop's clock, made in
// one clock operation.
func (l *Loop) Timer(d time.Duration) *clock.Timer { return l.clock.Timer(d) }

// Wake says why a wait returned.
type Wake int

const (
	// Closed: Close was called.
	Closed Wake = iota
	// Fired: the timer fired.
	Fired
	// Requested: a ResolveNow request arrived.
	Requested
)

// String returns the wake-up's name.
func (w Wake) String() string {
	switch w {
	case Fired:
		return "fired"
	case Requested:
		return "requested"
	default:
		return "closed"
	}
}

// Wait waits until t fires or a ResolveNow request arrives, and stops t.
// It reports Closed as soon as Close is called.
func (l *Loop) Wait(t *clock.Timer) Wake {
	defer t.Stop()
	if l.Closed() {
		return Closed
	}
	select {
	case <-l.ctx.Done():
		return Closed
	case <-l.resolveNow:
		return Requested
	case <-t.C:
		return Fired
	}
}

// Sleep waits until t fires, ignoring ResolveNow requests (they stay
// pending), and reports false if Close came first. It stops t.
func (l *Loop) Sleep(t *clock.Timer) bool {
	defer t.Stop()
	if l.Closed() {
		return false
	}
	select {
	case <-l.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// WaitResolveNow waits for a ResolveNow request, and reports false if Close
// came first.
func (l *Loop) WaitResolveNow() bool {
	if l.Closed() {
		return false
	}
	select {
	case <-l.ctx.Done():
		return false
	case <-l.resolveNow:
		return true
	}
}

// Do runs f(l.Context()) on a goroutine of its own and returns its result,
// or reports false at once when Close is called first. In that case f
// keeps running until it returns by itself; its result is then dropped.
func Do[T any](l *Loop, f func(ctx context.Context) T) (T, bool) {
	result := make(chan T, 1) // f's goroutine never blocks on it
	go func() { result <- f(l.ctx) }()
	select {
	case r := <-result:
		return r, !l.Closed()
	case <-l.ctx.Done():
		var zero T
		return zero, false
	}
}
