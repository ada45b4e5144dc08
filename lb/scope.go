package lb

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbkit/lbkit/lb/resolver"
)

// errScopeClosed is returned by NewSubConn through a [Scope.ClientConn]
// once the scope is closed.
var errScopeClosed = errors.New("lb: NewSubConn: the balancer is closed (its scope ended)")

// Scope is the [Scheduler] of one balancer: it runs work on its parent
// scheduler (the tree's [Serializer], or the scope of the balancer's
// parent) and ends with the balancer. A parent policy gives each balancer
// it builds a scope of its own in [BuildOptions].Scheduler and closes it
// when the balancer goes; package childmanager and the channel do so for
// every balancer of a tree.
//
// Once Close has been called on a scope, or on any scope it was made from
// with [NewScope] (its ancestors, at any depth):
//
//   - no callback queued with Schedule and no timer callback of the scope
//     or of its descendants runs, even if it was queued or its timer fired
//     before Close: the callback checks, when its turn comes, that every
//     scope it was made through is open;
//   - Schedule returns false and AfterFunc returns a stopped timer;
//   - pending timers are stopped at once, so they leave the serializer
//     (its NextDeadline no longer shows them);
//   - the scope's [Scope.ClientConn] drops every call of the balancer and
//     every SubConn state its listeners would have received.
//
// So once a parent has closed a balancer's scope and called its Close,
// nothing calls the balancer again: the parent makes no call and the scope
// drops everything else. "Nothing is called after Close" holds by
// construction, and no policy needs a closed flag.
//
// A Scope adds nothing to the pick path. All methods are safe for
// concurrent use (pickers call Schedule from any goroutine). Close called
// inside the tree's serialized calls, where parents call it, is exact: no
// callback of the scope runs after it returns. Called from another
// goroutine, it does not wait for a callback that is already running.
type Scope struct {
	parent Scheduler
	up     *Scope // parent as a Scope; nil when parent is not one
	closed atomic.Bool

	mu     sync.Mutex
	timers map[*scopeTimer]struct{} // pending; nil once closed
}

// NewScope returns an open scope whose work runs on parent, which must not
// be nil. When parent is a Scope, the new scope is its descendant: closing
// parent also ends it.
func NewScope(parent Scheduler) *Scope {
	s := &Scope{parent: parent, timers: make(map[*scopeTimer]struct{})}
	s.up, _ = parent.(*Scope)
	return s
}

// SerializerOf returns the [Serializer] that s runs its work on: s itself,
// or the serializer at the root of a chain of scopes; nil when there is
// none. A test reaches a tree's serializer this way from the
// [BuildOptions].Scheduler a policy is built with, to wait for its timers
// (see package lbtest, AdvanceSerializers).
func SerializerOf(s Scheduler) *Serializer {
	for {
		switch x := s.(type) {
		case *Serializer:
			return x
		case *Scope:
			s = x.parent
		default:
			return nil
		}
	}
}

// Closed reports whether the scope or one of its ancestors is closed.
func (s *Scope) Closed() bool {
	for x := s; x != nil; x = x.up {
		if x.closed.Load() {
			return true
		}
	}
	return false
}

// Schedule queues f on the parent scheduler; f runs unless the scope is
// closed by the time its turn comes. It returns false, and f never runs,
// when the scope is already closed.
func (s *Scope) Schedule(f func()) bool {
	if s.closed.Load() {
		return false
	}
	return s.parent.Schedule(func() {
		if !s.closed.Load() {
			f()
		}
	})
}

// AfterFunc runs f, serialized, once d has passed on the parent's clock,
// unless the timer is stopped or the scope closed first. See [Timer] for
// Stop's guarantee. After Close it returns a stopped timer.
func (s *Scope) AfterFunc(d time.Duration, f func()) Timer {
	t := &scopeTimer{s: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timers == nil || s.Closed() {
		return stoppedTimer{}
	}
	s.timers[t] = struct{}{}
	// Made under s.mu, so that Close and Stop see t.inner set.
	t.inner = s.parent.AfterFunc(d, func() {
		if s.forget(t) {
			f()
		}
	})
	return t
}

// forget removes t from the pending timers and reports whether it was
// there, that is whether its callback may still run.
func (s *Scope) forget(t *scopeTimer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.timers[t]; !ok {
		return false
	}
	delete(s.timers, t)
	return true
}

// Close ends the scope and, with it, every scope made from it: see [Scope]
// for what that guarantees. It stops the scope's pending timers and
// returns without waiting for anything. Calling Close again does nothing.
func (s *Scope) Close() {
	s.mu.Lock()
	s.closed.Store(true)
	timers := s.timers
	s.timers = nil
	s.mu.Unlock()
	for t := range timers {
		t.inner.Stop()
	}
}

// ClientConn returns a ClientConn that passes the calls of the scope's
// balancer to cc while the scope is open, and drops them once it is
// closed: UpdateState and ResolveNow do nothing and NewSubConn fails. The StateListener of each SubConn created through it
// is wrapped too, so a closed balancer hears nothing from its SubConns
// (not even SHUTDOWN). A parent gives its child this ClientConn rather
// than checking in each of its own methods whether the child was closed.
func (s *Scope) ClientConn(cc ClientConn) ClientConn { return scopedCC{s: s, cc: cc} }

type scopedCC struct {
	s  *Scope
	cc ClientConn
}

func (w scopedCC) NewSubConn(addrs []resolver.Address, opts NewSubConnOptions) (SubConn, error) {
	if w.s.Closed() {
		return nil, errScopeClosed
	}
	if l := opts.StateListener; l != nil {
		opts.StateListener = func(st SubConnState) {
			if !w.s.Closed() {
				l(st)
			}
		}
	}
	return w.cc.NewSubConn(addrs, opts)
}

func (w scopedCC) UpdateState(st State) {
	if !w.s.Closed() {
		w.cc.UpdateState(st)
	}
}

func (w scopedCC) ResolveNow() {
	if !w.s.Closed() {
		w.cc.ResolveNow()
	}
}

func (w scopedCC) Target() string { return w.cc.Target() }

// scopeTimer is a timer of a Scope: inner is the parent's timer.
type scopeTimer struct {
	s     *Scope
	inner Timer
}

func (t *scopeTimer) Stop() bool {
	if !t.s.forget(t) {
		return false
	}
	return t.inner.Stop()
}

// stoppedTimer is the timer AfterFunc returns after Close.
type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return false }
