package lbtest

import (
	"context"
	"fmt"
	"sync"

	"github.com/lbkit/lbkit/lb/resolver"
)

// ResolverEvent is one call a resolver made on a [ResolverClientConn].
type ResolverEvent struct {
	// State is the update, for UpdateState.
	State resolver.State
	// Err is the error, for ReportError; nil for UpdateState.
	Err error
}

// String describes the event, for test failures.
func (e ResolverEvent) String() string {
	if e.Err != nil {
		return fmt.Sprintf("ReportError(%v)", e.Err)
	}
	return fmt.Sprintf("UpdateState(%v)", e.State.Addresses)
}

// ResolverClientConn is a fake [resolver.ClientConn] for testing resolvers:
// it records every call, in order, in Events, and never drops one. The zero
// value is ready to use; it is safe for concurrent use.
type ResolverClientConn struct {
	// Events receives one event per UpdateState or ReportError call.
	Events Queue[ResolverEvent]

	mu         sync.Mutex
	updateErrs []error
}

var _ resolver.ClientConn = (*ResolverClientConn)(nil)

// UpdateState records s and returns the next error given to FailUpdates, or
// nil.
func (c *ResolverClientConn) UpdateState(s resolver.State) error {
	c.Events.push(ResolverEvent{State: s})
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.updateErrs) == 0 {
		return nil
	}
	err := c.updateErrs[0]
	c.updateErrs = c.updateErrs[1:]
	return err
}

// ReportError records err.
func (c *ResolverClientConn) ReportError(err error) {
	c.Events.push(ResolverEvent{Err: err})
}

// FailUpdates makes the next len(errs) UpdateState calls return errs, in
// order, as a channel rejecting an update would.
func (c *ResolverClientConn) FailUpdates(errs ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updateErrs = append(c.updateErrs, errs...)
}

// States returns the states of every UpdateState call so far, received
// or not, in order.
func (c *ResolverClientConn) States() []resolver.State {
	var out []resolver.State
	for _, e := range c.Events.All() {
		if e.Err == nil {
			out = append(out, e.State)
		}
	}
	return out
}

// Errors returns the errors of every ReportError call so far, received or
// not, in order.
func (c *ResolverClientConn) Errors() []error {
	var out []error
	for _, e := range c.Events.All() {
		if e.Err != nil {
			out = append(out, e.Err)
		}
	}
	return out
}

// Next receives the oldest event not yet received, failing the test if none
// arrives before the hang guard.
func (c *ResolverClientConn) Next(tb TB) ResolverEvent {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	e, err := c.Events.Receive(ctx)
	if err != nil {
		tb.Fatalf("lbtest: no resolver ClientConn call within %v", hangGuard)
	}
	return e
}

// NextState receives the next event, failing the test unless it is an
// UpdateState, and returns its state.
func (c *ResolverClientConn) NextState(tb TB) resolver.State {
	tb.Helper()
	e := c.Next(tb)
	if e.Err != nil {
		tb.Fatalf("lbtest: got %v, want UpdateState", e)
	}
	return e.State
}

// NextError receives the next event, failing the test unless it is a
// ReportError, and returns its error.
func (c *ResolverClientConn) NextError(tb TB) error {
	tb.Helper()
	e := c.Next(tb)
	if e.Err == nil {
		tb.Fatalf("lbtest: got %v, want ReportError", e)
	}
	return e.Err
}
