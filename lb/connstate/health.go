package connstate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// Verdict is what the health checks have found of a connected backend.
type Verdict int8

// The verdicts.
const (
	Unknown Verdict = iota // no check has answered yet
	Passing
	Failing
)

// HealthSettings is how a Health checks: the interval from one result to
// the next check, each check's timeout, the thresholds and the jitter.
type HealthSettings struct {
	// Interval is the time from one check's result to the next check.
	Interval time.Duration
	// Timeout bounds each check; a check that outlasts it fails.
	Timeout time.Duration
	// UnhealthyThreshold is how many failures in a row make a passing
	// backend failing.
	UnhealthyThreshold int
	// HealthyThreshold is how many passes in a row make a failing backend
	// passing.
	HealthyThreshold int
	// Jitter spreads each interval uniformly over ±Jitter of itself; 0
	// for none.
	Jitter float64
}

// HealthOwner is the I/O side of a Health. Its methods are called from
// inside Health's methods (or its timers), serialized; they must not call
// the Health back synchronously.
type HealthOwner interface {
	// StartCheck starts check id; its answer comes back through
	// Health.Result (or Health.Unimplemented) with the same id.
	StartCheck(id uint64)
	// CancelCheck says the check in flight is no longer wanted (answered,
	// timed out or stopped); the owner may cancel its I/O.
	CancelCheck()
	// SetVerdict is told each change of verdict, with the failing check's
	// error.
	SetVerdict(v Verdict, err error)
	// Checked is told every answer applied (nil: passed; a timeout's
	// error included), probes' too, after the verdict it led to:
	// SetVerdict, when the verdict changed, comes first.
	Checked(err error)
}

// ErrHealthTimeout is the error of a check that outlasted its timeout.
var ErrHealthTimeout = errors.New("health check timed out")

// Health is the health checking of one READY connection (gRFC A17, with
// thresholds): one check at a time, each bounded by a timeout on the
// Scheduler; the first answer decides at once; after that
// UnhealthyThreshold failures in a row make a passing backend failing and
// HealthyThreshold passes in a row make a failing one passing; the next
// check starts Interval (jittered) after an answer. It starts no goroutine.
// Its methods must be called serialized with each other and the
// Scheduler's callbacks; it is not safe for concurrent use.
type Health struct {
	sched lb.Scheduler
	rand  *rand.Rand
	owner HealthOwner

	set           HealthSettings
	on            bool
	verdict       Verdict
	err           error
	passes, fails int
	gen           uint64 // identifies the check in flight
	inFlight      bool
	timer         lb.Timer // the check's timeout, or the next check
	passed        func()   // set while probing: called at the first pass
}

// NewHealth returns a Health that is not checking. r jitters the
// intervals; nil means no jitter.
func NewHealth(sched lb.Scheduler, r *rand.Rand, owner HealthOwner) *Health {
	return &Health{sched: sched, rand: r, owner: owner}
}

// Verdict returns the verdict and the error of the failing check.
func (h *Health) Verdict() (Verdict, error) { return h.verdict, h.err }

// Start starts checking with s at once.
func (h *Health) Start(s HealthSettings) {
	h.Stop()
	h.set, h.on = s, true
	h.runCheck()
}

// Probe checks a backend that has no connection (one backing off after a
// failed dial), with s: the first check starts s.Interval (jittered) from
// now, the next one s.Interval after each failed answer, each bounded by
// s.Timeout. A probe decides no verdict (it stays Unknown, the thresholds
// play no part): the first pass (or an answer that the backend does not
// implement checks) stops the probing and calls passed. The owner hears
// every answer through Checked.
func (h *Health) Probe(s HealthSettings, passed func()) {
	h.Stop()
	h.set, h.on, h.passed = s, true, passed
	h.scheduleNext()
}

// Stop cancels the check in flight and the next one and forgets the
// verdict, without telling the owner of it; it ends probing too.
func (h *Health) Stop() {
	h.on, h.passed = false, nil
	h.gen++ // a result still on its way is stale
	h.cancel()
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.verdict, h.err, h.passes, h.fails = Unknown, nil, 0, 0
}

func (h *Health) cancel() {
	if h.inFlight {
		h.inFlight = false
		h.owner.CancelCheck()
	}
}

func (h *Health) runCheck() {
	h.gen++
	gen := h.gen
	h.inFlight = true
	timeout := h.set.Timeout
	h.timer = h.sched.AfterFunc(timeout, func() {
		h.Result(gen, fmt.Errorf("%w after %v", ErrHealthTimeout, timeout))
	})
	h.owner.StartCheck(gen)
}

// Awaits reports whether check id is the one in flight: its answer would
// be applied, not ignored as stale.
func (h *Health) Awaits(id uint64) bool { return h.on && id == h.gen && h.inFlight }

// answered ends check id if it is the one in flight.
func (h *Health) answered(id uint64) bool {
	if !h.Awaits(id) {
		return false // stale: the check was stopped, timed out or answered
	}
	h.gen++ // a later answer to this check is stale
	h.cancel()
	h.timer.Stop()
	h.timer = nil
	return true
}

// Result applies the answer of check id (nil: passed) and schedules the
// next check. A stale id changes nothing; it returns whether it applied.
func (h *Health) Result(id uint64, err error) bool {
	if !h.answered(id) {
		return false
	}
	if h.passed != nil {
		h.probed(err, err == nil)
		return true
	}
	if err == nil {
		h.passes, h.fails = h.passes+1, 0
		if h.verdict == Unknown || (h.verdict == Failing && h.passes >= h.set.HealthyThreshold) {
			h.setVerdict(Passing, nil)
		}
	} else {
		h.passes, h.fails = 0, h.fails+1
		switch {
		case h.verdict == Unknown || (h.verdict == Passing && h.fails >= h.set.UnhealthyThreshold):
			h.setVerdict(Failing, err)
		case h.verdict == Failing:
			h.err = err
		}
	}
	h.owner.Checked(err)
	h.scheduleNext()
	return true
}

// probed applies a probe's answer err: a pass ends the probing and calls
// passed; a failure schedules the next probe.
func (h *Health) probed(err error, pass bool) {
	h.owner.Checked(err)
	if !pass {
		h.scheduleNext()
		return
	}
	passed := h.passed
	h.Stop()
	passed()
}

// scheduleNext starts the next check one interval (jittered) from now.
func (h *Health) scheduleNext() {
	h.timer = h.sched.AfterFunc(h.jittered(), func() {
		h.timer = nil
		if h.on {
			h.runCheck()
		}
	})
}

// Unimplemented applies check id's finding, err, that the backend does
// not implement health checking: it is passing, and not checked again
// (A17). A probe that finds it passes.
func (h *Health) Unimplemented(id uint64, err error) bool {
	if !h.answered(id) {
		return false
	}
	if h.passed != nil {
		h.probed(err, true) // the backend answers: that is all a probe asks
		return true
	}
	h.setVerdict(Passing, nil)
	h.owner.Checked(err)
	return true
}

func (h *Health) setVerdict(v Verdict, err error) {
	if v == h.verdict {
		return
	}
	h.verdict, h.err = v, err
	h.owner.SetVerdict(v, err)
}

// jittered returns the interval to the next check.
func (h *Health) jittered() time.Duration {
	if h.set.Jitter == 0 || h.rand == nil {
		return h.set.Interval
	}
	return time.Duration(float64(h.set.Interval) * (1 + h.set.Jitter*(2*h.rand.Float64()-1)))
}

// View returns the state a SubConn that asked for health checks sees of a
// connection in state s with health gating on: s itself unless READY;
// then CONNECTING until the first answer, READY while passing and
// TRANSIENT_FAILURE while failing (gRFC A17).
func View(s lb.ConnectivityState, v Verdict) lb.ConnectivityState {
	if s != lb.Ready {
		return s
	}
	switch v {
	case Passing:
		return lb.Ready
	case Failing:
		return lb.TransientFailure
	}
	return lb.Connecting
}
