package lb

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// The errors a Picker returns; see [Picker] and [ClassifyPickError].
var (
	// ErrNoSubConnAvailable means no SubConn can take the request yet but
	// the balancer is making progress (for example connecting): the
	// request is queued until the balancer publishes its next picker.
	ErrNoSubConnAvailable = errors.New("lb: no SubConn is available")
	// ErrTransientFailure marks an error that fails requests that are not
	// wait-for-ready and queues wait-for-ready ones. Wrap a cause with
	// [TransientFailureError].
	ErrTransientFailure = errors.New("lb: transient failure")
	// ErrDropped marks an error that fails every request, wait-for-ready
	// or not. Wrap a cause with [DropError].
	ErrDropped = errors.New("lb: request dropped by the load-balancing policy")
	// ErrBadResolverState is returned by UpdateClientConnState when the
	// update cannot be used (for example it has no address); the channel
	// then asks the resolver to resolve again, with backoff.
	ErrBadResolverState = errors.New("lb: bad resolver state")
)

// markedError wraps a cause with a marker sentinel, so that errors.Is
// matches both and the message is the cause's.
type markedError struct {
	mark  error
	cause error
}

func (e *markedError) Error() string   { return e.cause.Error() }
func (e *markedError) Unwrap() []error { return []error{e.mark, e.cause} }

// TransientFailureError returns an error that matches both err and
// [ErrTransientFailure] with errors.Is, with err's message. A nil err gives
// ErrTransientFailure itself.
func TransientFailureError(err error) error {
	if err == nil {
		return ErrTransientFailure
	}
	return &markedError{mark: ErrTransientFailure, cause: err}
}

// DropError returns an error that matches both err and [ErrDropped] with
// errors.Is, with err's message. A nil err gives ErrDropped itself.
func DropError(err error) error {
	if err == nil {
		return ErrDropped
	}
	return &markedError{mark: ErrDropped, cause: err}
}

// PickAction is what the channel does with a request after a Pick error.
type PickAction int

const (
	// PickQueue waits for the next picker.
	PickQueue PickAction = iota
	// PickFailUnlessWaitForReady fails the request, or queues it if it
	// is wait-for-ready.
	PickFailUnlessWaitForReady
	// PickFail fails the request whatever its wait-for-ready setting.
	PickFail
)

// String names the action.
func (a PickAction) String() string {
	switch a {
	case PickQueue:
		return "queue"
	case PickFailUnlessWaitForReady:
		return "fail-unless-wait-for-ready"
	case PickFail:
		return "fail"
	}
	return fmt.Sprintf("PickAction(%d)", int(a))
}

// ClassifyPickError returns what to do with a request whose Pick returned
// err (non-nil):
//   - errors.Is(err, ErrNoSubConnAvailable): [PickQueue];
//   - errors.Is(err, ErrDropped): [PickFail];
//   - anything else, [ErrTransientFailure] included:
//     [PickFailUnlessWaitForReady].
//
// Treating an unmarked error as a transient failure follows grpc-go rather
// than L9's text (which fails on "other errors"), so that a policy that
// forgets to mark its error does not silently break wait-for-ready.
func ClassifyPickError(err error) PickAction {
	switch {
	case errors.Is(err, ErrNoSubConnAvailable):
		return PickQueue
	case errors.Is(err, ErrDropped):
		return PickFail
	default:
		return PickFailUnlessWaitForReady
	}
}

// errPicker fails every pick with one error.
type errPicker struct{ err error }

func (p errPicker) Pick(PickInfo) (PickResult, error) { return PickResult{}, p.err }

// Failure returns the error every Pick returns.
func (p errPicker) Failure() error { return p.err }

// FailingPicker is a picker that fails every pick with one error and says
// which, so that a parent policy can report a child's failure without
// calling Pick (which has effects: an IDLE picker starts connecting, a
// picked SubConn needs its Done). The pickers of [NewErrPicker] and
// [NewQueuePicker] implement it; so should a policy's own picker for
// TRANSIENT_FAILURE.
type FailingPicker interface {
	Picker
	// Failure returns the error every Pick returns.
	Failure() error
}

// FailureOf returns the error p fails every pick with if p is a
// [FailingPicker], and nil otherwise. It never calls Pick.
func FailureOf(p Picker) error {
	if f, ok := p.(FailingPicker); ok {
		return f.Failure()
	}
	return nil
}

// NewErrPicker returns a picker whose every Pick returns err. Use it with
// [TransientFailureError] for a policy in TRANSIENT_FAILURE, or with
// [DropError] to fail every request.
func NewErrPicker(err error) Picker { return errPicker{err: err} }

// NewQueuePicker returns a picker whose every Pick returns
// [ErrNoSubConnAvailable], for a policy that is connecting.
func NewQueuePicker() Picker { return errPicker{err: ErrNoSubConnAvailable} }

// NewIdlePicker returns the picker a balancer publishes in IDLE: every
// Pick queues the request ([ErrNoSubConnAvailable]), and the first one
// schedules exitIdle on s, so that the balancer leaves IDLE once and the
// picker it then publishes serves the queued requests. Pick is safe for
// concurrent use and does not allocate.
func NewIdlePicker(s Scheduler, exitIdle func()) Picker {
	return &idlePicker{sched: s, exitIdle: exitIdle}
}

type idlePicker struct {
	sched    Scheduler
	exitIdle func()
	fired    atomic.Bool
}

func (p *idlePicker) Pick(PickInfo) (PickResult, error) {
	if !p.fired.Load() && p.fired.CompareAndSwap(false, true) {
		p.sched.Schedule(p.exitIdle)
	}
	return PickResult{}, ErrNoSubConnAvailable
}
