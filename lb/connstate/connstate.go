// Package connstate is the connectivity state machine of one connection
// ([Machine]): IDLE → CONNECTING → READY, or TRANSIENT_FAILURE for a
// backoff delay and then IDLE; a lost READY connection goes IDLE (gRPC's
// connection backoff document and gRFC A62's SubConn states); and its
// health checking ([Health], gRFC A17 with thresholds). Neither starts a
// goroutine or reads a clock: the owner tells them what its I/O found (a
// dial's result, a lost connection, a check's answer), and their timers
// (the backoff, a check's timeout, the next check) run on an lb.Scheduler.
//
// The channel (conn) drives them with real dials and checks on goroutines
// of its own; the simulator (sim) drives the same code with virtual dials
// and checks in virtual time. What they decide (when to dial, with which
// timeout, how long to back off, when a backend is healthy) is thus the
// same code in both.
package connstate

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
)

// Config is what a Machine needs besides its owner.
type Config struct {
	// Scheduler runs the backoff timer, serialized with the owner's calls.
	Scheduler lb.Scheduler
	// Backoff is the schedule of delays after failed attempts.
	Backoff backoff.Config
	// MinConnectTimeout is the least time an attempt is given
	// (MIN_CONNECT_TIMEOUT); an attempt's timeout is the larger of it and
	// the backoff delay, without jitter, of the failures so far.
	MinConnectTimeout time.Duration
	// Rand jitters the backoff delays; nil means no jitter.
	Rand *rand.Rand
}

// Owner is the I/O side of a Machine: it dials, and hears of every state
// the machine enters. Both methods are called from inside the Machine's
// methods (or its timer), serialized; they must not call the Machine back
// synchronously.
type Owner interface {
	// Dial starts attempt id, giving each address at most timeout. Its
	// result comes back later through Machine.Connected or Machine.Failed
	// with the same id.
	Dial(id uint64, timeout time.Duration)
	// SetState is told the state the machine entered, with the error of a
	// TRANSIENT_FAILURE.
	SetState(s lb.ConnectivityState, err error)
}

// Machine is the state of one connection. Its methods must be called
// serialized with each other and with Config.Scheduler's callbacks (from
// the owner's serializer); it is not safe for concurrent use.
type Machine struct {
	cfg     Config
	owner   Owner
	state   lb.ConnectivityState
	attempt uint64 // identifies the current dial or connection
	retries int    // failed attempts in a row
	backoff lb.Timer

	health   *Health         // nil: no health checking
	settings *HealthSettings // nil: health checking off
}

// New returns an IDLE machine.
func New(cfg Config, owner Owner) *Machine {
	return &Machine{cfg: cfg, owner: owner, state: lb.Idle}
}

// State returns the machine's state.
func (m *Machine) State() lb.ConnectivityState { return m.state }

// Attempt returns the id of the current dial or connection: results and
// losses reported with an older id are stale and ignored.
func (m *Machine) Attempt() uint64 { return m.attempt }

// Connect starts an attempt if the machine is IDLE: it enters CONNECTING
// and asks the owner to dial. It does nothing in any other state.
func (m *Machine) Connect() {
	if m.state != lb.Idle {
		return
	}
	m.attempt++
	timeout := max(m.cfg.MinConnectTimeout, m.cfg.Backoff.Delay(m.retries, nil))
	m.set(lb.Connecting, nil)
	m.owner.Dial(m.attempt, timeout)
}

// Connected reports that attempt id reached the backend: the machine
// enters READY and the backoff starts over. It returns false, changing
// nothing, if id is stale (the owner then closes what it dialed).
func (m *Machine) Connected(id uint64) bool {
	if id != m.attempt || m.state != lb.Connecting {
		return false
	}
	m.retries = 0
	m.set(lb.Ready, nil)
	return true
}

// SetHealth makes the machine run h with s from now on, restarting it: A17
// checks ([Health.Start]) while READY; probes ([Health.Probe]) while
// TRANSIENT_FAILURE, the first one s.Interval after the failure (or after
// this call), a passing one ending the backoff at once (the machine goes
// IDLE, keeping its count of failures, so the owner's next Connect dials);
// nothing in the other states. A nil h or s stops h and turns checking
// off. h must be used by this machine alone.
func (m *Machine) SetHealth(h *Health, s *HealthSettings) {
	if m.health != nil && m.health != h {
		m.health.Stop()
	}
	m.health, m.settings = h, s
	m.followHealth()
}

// followHealth stops the checks of the last state and starts those of the
// current one.
func (m *Machine) followHealth() {
	if m.health == nil {
		return
	}
	m.health.Stop()
	if m.settings == nil {
		return
	}
	switch m.state {
	case lb.Ready:
		m.health.Start(*m.settings)
	case lb.TransientFailure:
		m.health.Probe(*m.settings, m.probePassed)
	}
}

// probePassed ends the backoff: a probe found the backend answering.
func (m *Machine) probePassed() {
	if m.state != lb.TransientFailure {
		return
	}
	if m.backoff != nil {
		m.backoff.Stop()
		m.backoff = nil
	}
	m.set(lb.Idle, nil)
}

// errNoAddress stands for a failure reported without an error.
var errNoAddress = errors.New("conn: no address to dial")

// Failed reports that attempt id failed with err: the machine enters
// TRANSIENT_FAILURE, and IDLE after the backoff delay it returns, or
// sooner when a probe passes (see [Machine.SetHealth]). ok is false, and
// nothing changes, if id is stale.
func (m *Machine) Failed(id uint64, err error) (delay time.Duration, ok bool) {
	if id != m.attempt || m.state != lb.Connecting {
		return 0, false
	}
	if err == nil {
		err = errNoAddress
	}
	delay = m.cfg.Backoff.Delay(m.retries, m.cfg.Rand)
	m.retries++
	m.set(lb.TransientFailure, err)
	m.backoff = m.cfg.Scheduler.AfterFunc(delay, func() {
		m.backoff = nil
		if m.state == lb.TransientFailure {
			m.set(lb.Idle, nil)
		}
	})
	return delay, true
}

// Lost reports that connection id, READY, was lost: the machine enters
// IDLE, and results of id reported later are stale. It returns false,
// changing nothing, if id is stale or the machine is not READY.
func (m *Machine) Lost(id uint64) bool {
	if id != m.attempt || m.state != lb.Ready {
		return false
	}
	m.attempt++
	m.set(lb.Idle, nil)
	return true
}

// Close ends the machine for good: it enters SHUTDOWN without telling the
// owner, stops its timer and its health checks, and every result reported
// later is stale.
func (m *Machine) Close() {
	if m.state == lb.Shutdown {
		return
	}
	m.attempt++
	if m.backoff != nil {
		m.backoff.Stop()
		m.backoff = nil
	}
	m.state = lb.Shutdown
	m.followHealth()
}

// set enters s, tells the owner, and then starts the checks s calls for.
func (m *Machine) set(s lb.ConnectivityState, err error) {
	m.state = s
	m.owner.SetState(s, err)
	m.followHealth()
}
