package conn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// PickOptions describes one request to [Channel.Pick].
type PickOptions struct {
	// WaitForReady makes the pick wait through TRANSIENT_FAILURE for a
	// connection instead of failing at once. If not set, the pick fails
	// fast.
	WaitForReady bool
	// Method names the request for the policy (an HTTP path, an RPC
	// name); it may be empty.
	Method string
	// Metadata is the request's metadata (HTTP headers), for policies
	// that read a header, such as ring_hash's requestHashHeader; nil if
	// none. Pick does not keep it.
	Metadata lb.Metadata
	// Hash is the request's hash for hash-based policies (ring_hash), when
	// HasHash is set: requests with equal hashes go to the same endpoint
	// while it can serve.
	Hash uint64
	// HasHash reports whether Hash is set.
	HasHash bool
	// Authority is the request's authority (the HTTP Host), for routing
	// policies; empty if none.
	Authority string
	// HTTPMethod is the request's HTTP method, for routing policies;
	// empty if none.
	HTTPMethod string
}

// PickResult is a successful pick.
type PickResult struct {
	// SubConn is the READY connection chosen; send the request to
	// SubConn.Address().
	SubConn *SubConn
	// Done, when not nil, must be called once when the request ends.
	Done func(lb.DoneInfo)
	// Timeout, when not 0, is how long the request may last from the
	// pick, as the policy says ([lb.PickResult].Timeout): the transport
	// applies it as a deadline.
	Timeout time.Duration
}

// Finish reports the end of the request, then calls Done if set. A
// request that was sent (info.Err does not wrap [lb.ErrRequestNotSent])
// counts against the SubConn's endpoint, as a failure too when info.Err
// is not nil: the requests and failures of [Channel.Snapshot] and of the
// lbkit.endpoint.requests and lbkit.endpoint.failures metrics. Call
// Finish rather than Done, once per pick. It does not allocate or lock;
// safe from any goroutine.
func (r PickResult) Finish(info lb.DoneInfo) {
	if r.SubConn != nil {
		r.SubConn.ac.stats.finished(info.Err)
	}
	if r.Done != nil {
		r.Done(info)
	}
}

// errNotReady is recorded when a picker returned a SubConn that is not READY
// (it changed state after the picker was built); the pick then waits for the
// next picker, which the SubConn's state change brings, whether or not it is
// wait-for-ready.
var errNotReady = fmt.Errorf("conn: picked SubConn is not READY: %w", lb.ErrRequestNotSent)

// ErrNilContext is returned by [Channel.Pick] when its context is nil.
var ErrNilContext = errors.New("conn: Pick: nil context")

// Pick chooses a READY connection for a request, waiting as the policy
// directs:
//   - the policy has no connection yet ([lb.ErrNoSubConnAvailable]), or the
//     SubConn it picked is no longer READY: wait for its next picker, or for
//     ctx;
//   - TRANSIENT_FAILURE: fail at once with the policy's error, unless
//     opts.WaitForReady, which waits;
//   - a drop ([lb.ErrDropped]): fail at once, even with WaitForReady;
//   - ctx ends: fail with an error naming ctx's error and the last picker
//     error;
//   - ctx is nil: fail at once with [ErrNilContext].
//
// An IDLE channel starts connecting. Pick is safe for concurrent use; when a
// READY picker is published it takes no lock and does not allocate.
func (c *Channel) Pick(ctx context.Context, opts PickOptions) (PickResult, error) {
	if ctx == nil {
		return PickResult{}, ErrNilContext
	}
	if !c.active.Load() {
		c.active.Store(true)
	}
	info := lb.PickInfo{Ctx: ctx, Method: opts.Method, Metadata: opts.Metadata, Hash: opts.Hash, HasHash: opts.HasHash,
		Authority: opts.Authority, HTTPMethod: opts.HTTPMethod}
	g := c.gen.Load()
	r, err := c.tryPick(g, info)
	if err == nil {
		return r, nil
	}
	return c.waitAndPick(ctx, opts.WaitForReady, info, g, err)
}

// tryPick asks g's picker once. It returns a READY SubConn, or why not:
// errIdle, errNotReady, or the picker's error.
func (c *Channel) tryPick(g *pickerGen, info lb.PickInfo) (PickResult, error) {
	if g.idle {
		c.requestExitIdle()
		return PickResult{}, errIdle
	}
	r, err := g.picker.Pick(info)
	if err != nil {
		return PickResult{}, err
	}
	sc, ok := r.SubConn.(*SubConn)
	if !ok {
		if r.Done != nil {
			r.Done(lb.DoneInfo{Err: errForeignSubConn})
		}
		return PickResult{}, lb.DropError(fmt.Errorf("%w: got %T", errForeignSubConn, r.SubConn))
	}
	if !sc.ready() {
		if r.Done != nil {
			r.Done(lb.DoneInfo{Err: errNotReady})
		}
		return PickResult{}, errNotReady
	}
	return PickResult{SubConn: sc, Done: r.Done, Timeout: r.Timeout}, nil
}

var errForeignSubConn = fmt.Errorf("conn: the policy picked a SubConn this channel did not create: %w", lb.ErrRequestNotSent)

// waitAndPick waits for new pickers and picks again, after a first pick from
// g failed with err, until a pick succeeds, err says to fail, or ctx ends.
func (c *Channel) waitAndPick(ctx context.Context, waitForReady bool, info lb.PickInfo, g *pickerGen, err error) (PickResult, error) {
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	for {
		if failsNow(err, waitForReady) {
			return PickResult{}, c.pickFailed(err)
		}
		select {
		case <-g.done:
		case <-ctx.Done():
			c.metrics.pickDeadline.Add(1)
			pe := &PickError{Ctx: ctx.Err(), Last: err}
			c.notePickError(pe)
			return PickResult{}, pe
		}
		g = c.gen.Load()
		r, pickErr := c.tryPick(g, info)
		if pickErr == nil {
			return r, nil
		}
		err = pickErr
	}
}

// failsNow reports whether a pick that failed with err fails the request
// rather than waiting for the next picker.
func failsNow(err error, waitForReady bool) bool {
	if err == errIdle || err == errNotReady {
		return false
	}
	switch lb.ClassifyPickError(err) {
	case lb.PickFail:
		return true
	case lb.PickFailUnlessWaitForReady:
		return !waitForReady
	default:
		return false
	}
}

var errIdle = errors.New("conn: channel is idle; connecting")

// PickError is returned by [Channel.Pick] when the request's context ends
// while it waits. It matches the context's error with errors.Is.
type PickError struct {
	// Ctx is the context's error.
	Ctx error
	// Last is the last error the picker returned, if any.
	Last error
}

// Error names both errors.
func (e *PickError) Error() string {
	if e.Last == nil {
		return fmt.Sprintf("conn: pick: %v", e.Ctx)
	}
	return fmt.Sprintf("conn: pick: %v while waiting for a connection; last pick error: %v", e.Ctx, e.Last)
}

// Unwrap returns both errors.
func (e *PickError) Unwrap() []error { return []error{e.Ctx, e.Last} }
