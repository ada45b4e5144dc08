package conn

import (
	"context"
	"errors"
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/connstate"
)

// healthSettings is the health checking in force: the channel's
// [HealthCheck] with its defaults, and the service name from the service
// config. Nil means health checking is off.
type healthSettings struct {
	hc      HealthCheck
	service string
}

// healthVerdict is what the checks have found of a connected backend: a
// connstate.Verdict, with the same values.
type healthVerdict connstate.Verdict

const (
	healthUnknown = healthVerdict(connstate.Unknown) // no check has answered yet
	healthPassing = healthVerdict(connstate.Passing)
	healthFailing = healthVerdict(connstate.Failing)
)

// effectiveHealth returns the health checking the channel's options and
// the service config in force call for. Runs serialized.
func (c *Channel) effectiveHealth() *healthSettings {
	if c.cfg.healthCheckOff {
		return nil
	}
	var service *string
	for _, sc := range []*serviceConfig{c.lastSC, c.defSC} {
		if sc != nil {
			service = sc.healthService
			break
		}
	}
	switch {
	case service != nil && c.cfg.healthCheck != nil:
		return &healthSettings{hc: c.cfg.healthCheck.withDefaults(), service: *service}
	case service != nil:
		return &healthSettings{hc: HealthCheck{}.withDefaults(), service: *service}
	case c.cfg.healthCheck != nil && !c.cfg.healthCheck.ServiceConfigOnly:
		return &healthSettings{hc: c.cfg.healthCheck.withDefaults()}
	}
	return nil
}

// applyHealth puts the health checking called for now in force, restarting
// the checks of every connection when it changed. Runs serialized.
func (c *Channel) applyHealth() {
	h := c.effectiveHealth()
	if (h == nil) == (c.health == nil) && (h == nil || *h == *c.health) {
		return
	}
	c.health = h
	for _, ac := range c.addrConns {
		ac.updateHealthGate(true)
		if h != nil && len(ac.handles) > ac.wantHealth && c.current != nil {
			c.warnUnchecked(c.current.name)
		}
	}
}

// warnUnchecked logs, once in the channel's life, that health checking is
// on but policy made a connection without asking for it: the option or
// the service config's healthCheckConfig does nothing for it. Runs
// serialized.
func (c *Channel) warnUnchecked(policy string) {
	if c.warnedHealth {
		return
	}
	c.warnedHealth = true
	c.logger.Warn("health checking is on, but the policy does not ask for it: its connections are not checked (pick_first never health-checks, as gRFC A17 says; round_robin, least_request_experimental and weighted_round_robin do)",
		"policy", policy)
}

// updateHealthGate recomputes whether health decides this connection's
// readiness: health checking is on and a handle asked for it. With restart,
// checks start over even if the gate did not change (new settings).
func (ac *addrConn) updateHealthGate(restart bool) {
	gated := ac.c.health != nil && ac.wantHealth > 0
	if gated == ac.gated.Load() && !restart {
		return
	}
	ac.gated.Store(gated)
	ac.forgetVerdict()
	if ac.closed {
		return
	}
	var s *connstate.HealthSettings
	if gated {
		hc := ac.c.health.hc
		s = &connstate.HealthSettings{Interval: hc.Interval, Timeout: hc.Timeout,
			UnhealthyThreshold: hc.UnhealthyThreshold, HealthyThreshold: hc.HealthyThreshold, Jitter: hc.Jitter}
	}
	// The machine runs the checks as its state calls for: A17's while
	// READY (CONNECTING to the health-checked handles until the first
	// answer), probes while it backs off, a passing probe ending the
	// backoff.
	ac.m.SetHealth(ac.health, s)
	ac.notify()
}

// forgetVerdict forgets what the checks found: the machine restarts them
// at every change of state.
func (ac *addrConn) forgetVerdict() {
	ac.verdict, ac.verdictErr = healthUnknown, nil
	ac.healthy.Store(false)
}

// acHealth is an addrConn as the I/O side of its connstate.Health.
type acHealth addrConn

// StartCheck runs one check on a goroutine of its own; its result comes
// back through onHealthResult, serialized.
func (o *acHealth) StartCheck(gen uint64) {
	ac := (*addrConn)(o)
	c := ac.c
	h := c.health
	ctx, cancel := context.WithCancel(c.ctx)
	ac.checkCancel = cancel
	addr := *ac.addr.Load()
	c.goDetached(func() {
		err := h.hc.Checker.Check(ctx, addr, h.service)
		c.ser.Schedule(func() { ac.onHealthResult(gen, err) })
	})
}

// CancelCheck cancels the check in flight.
func (o *acHealth) CancelCheck() {
	if o.checkCancel != nil {
		o.checkCancel()
		o.checkCancel = nil
	}
}

// SetVerdict records a change of verdict and tells the handles.
func (o *acHealth) SetVerdict(v connstate.Verdict, err error) {
	ac := (*addrConn)(o)
	prev := ac.verdict
	ac.verdict, ac.verdictErr = healthVerdict(v), err
	ac.healthy.Store(v == connstate.Passing)
	if v == connstate.Failing {
		ac.c.metrics.healthFailing.Add(1)
	} else {
		ac.c.metrics.healthPassing.Add(1)
	}
	switch {
	case v == connstate.Failing:
		ac.c.logger.Warn("backend unhealthy", "addr", ac.addr.Load().Addr, "error", err)
	case prev == healthFailing:
		ac.c.logger.Info("backend healthy again", "addr", ac.addr.Load().Addr)
	default:
		ac.c.logger.Debug("backend healthy", "addr", ac.addr.Load().Addr)
	}
	ac.notify()
}

// onHealthResult applies one check's result (connstate.Health.Result: gRFC
// A17 with thresholds). A backend that does not implement health checking
// is healthy and not checked again.
func (ac *addrConn) onHealthResult(gen uint64, err error) {
	if ac.closed {
		return
	}
	if errors.Is(err, ErrHealthCheckUnimplemented) {
		// A probe of a connection in backoff that finds this passes
		// without a word; the check of the connection it leads to logs.
		if ac.health.Awaits(gen) && ac.state == lb.Ready {
			ac.c.logger.Error("the backend does not implement health checking; treating it as healthy and not checking again", "addr", ac.addr.Load().Addr, "error", err)
		}
		ac.health.Unimplemented(gen, err)
	} else {
		ac.health.Result(gen, err)
	}
}

// Checked records an answer applied (a timeout's included): the count, the
// last check for the snapshot, and the error of a backend still failing.
func (o *acHealth) Checked(err error) {
	ac := (*addrConn)(o)
	ac.checks++
	ac.noteCheck(err)
	_, ac.verdictErr = ac.health.Verdict()
}

// viewFor returns the state handle sc sees: the connection's own state,
// unless sc asked for health checks, health checking is on and the
// connection is READY; then CONNECTING until the first check answers,
// READY while passing and TRANSIENT_FAILURE while failing (gRFC A17).
func (ac *addrConn) viewFor(sc *SubConn) (lb.ConnectivityState, error) {
	if ac.state != lb.Ready || !sc.wantsHealth || !ac.gated.Load() {
		return ac.state, ac.err
	}
	s := connstate.View(ac.state, connstate.Verdict(ac.verdict))
	if s == lb.TransientFailure {
		return s, fmt.Errorf("conn: health check of %s: %w", ac.addr.Load().Addr, ac.verdictErr)
	}
	return s, nil
}

// notify delivers to every handle the state it sees.
func (ac *addrConn) notify() {
	for sc := range ac.handles {
		sc.setState(ac.viewFor(sc))
	}
}
