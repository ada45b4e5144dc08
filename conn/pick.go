package conn

import (
	"context"
	"errors"
	"fmt"

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
}

// PickResult is a successful pick.
type PickResult struct {
	// SubConn is the READY connection chosen; send the request to
	// SubConn.Address().
	SubConn *SubConn
	// Done, when not nil, must be called once when the request ends.
	Done func(lb.DoneInfo)
}

// errNotReady is recorded when a picker returned a SubConn that is not READY
// (it changed state after the picker was built); the pick then waits for the
// next picker.
var errNotReady = errors.New("conn: picked SubConn is not READY")

// Pick chooses a READY connection for a request, waiting as the policy
// directs:
//   - the policy has no connection yet ([lb.ErrNoSubConnAvailable]): wait
//     for its next picker, or for ctx;
//   - TRANSIENT_FAILURE: fail at once with the policy's error, unless
//     opts.WaitForReady, which waits;
//   - a drop ([lb.ErrDropped]): fail at once, even with WaitForReady;
//   - ctx ends: fail with an error naming ctx's error and the last picker
//     error.
//
// An IDLE channel starts connecting. Pick is safe for concurrent use; when a
// READY picker is published it takes no lock and does not allocate.
func (c *Channel) Pick(ctx context.Context, opts PickOptions) (PickResult, error) {
	if !c.active.Load() {
		c.active.Store(true)
	}
	info := lb.PickInfo{Ctx: ctx, Method: opts.Method}
	var lastErr error
	counted := false
	for {
		g := c.gen.Load()
		if g.idle {
			c.requestExitIdle()
			lastErr = errIdle
		} else {
			r, err := g.picker.Pick(info)
			if err == nil {
				if sc, ok := r.SubConn.(*SubConn); ok && sc.ready() {
					if counted {
						c.waiting.Add(-1)
					}
					return PickResult{SubConn: sc, Done: r.Done}, nil
				}
				if r.Done != nil {
					r.Done(lb.DoneInfo{Err: errNotReady})
				}
				err = errNotReady
			}
			lastErr = err
			if action := lb.ClassifyPickError(err); action == lb.PickFail ||
				(action == lb.PickFailUnlessWaitForReady && !opts.WaitForReady) {
				if counted {
					c.waiting.Add(-1)
				}
				return PickResult{}, err
			}
		}
		if !counted {
			counted = true
			c.waiting.Add(1)
		}
		select {
		case <-g.done:
		case <-ctx.Done():
			c.waiting.Add(-1)
			return PickResult{}, &PickError{Ctx: ctx.Err(), Last: lastErr}
		}
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
