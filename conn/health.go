package conn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// healthSettings is the health checking in force: the channel's
// [HealthCheck] with its defaults, and the service name from the service
// config. Nil means health checking is off.
type healthSettings struct {
	hc      HealthCheck
	service string
}

// healthVerdict is what the checks have found of a connected backend.
type healthVerdict int8

const (
	healthUnknown healthVerdict = iota // no check has answered yet
	healthPassing
	healthFailing
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
	ac.stopHealth()
	ac.startHealth()
	ac.notify()
}

// startHealth starts checking a READY, gated connection: it stays
// CONNECTING to its health-checked handles until the first answer.
func (ac *addrConn) startHealth() {
	if ac.closed || ac.state != lb.Ready || !ac.gated.Load() {
		return
	}
	ac.runCheck()
}

// stopHealth cancels the check in flight and the next one, and forgets the
// verdict.
func (ac *addrConn) stopHealth() {
	ac.checkGen++ // a result still on its way is stale
	if ac.checkCancel != nil {
		ac.checkCancel()
		ac.checkCancel = nil
	}
	if ac.checkTimer != nil {
		ac.checkTimer.Stop()
		ac.checkTimer = nil
	}
	ac.verdict, ac.verdictErr, ac.passes, ac.fails = healthUnknown, nil, 0, 0
	ac.healthy.Store(false)
}

var errHealthTimeout = errors.New("health check timed out")

// runCheck starts one check on a goroutine of its own; its result, or its
// timeout on the channel's clock, comes back through onHealthResult.
func (ac *addrConn) runCheck() {
	c := ac.c
	h := c.health
	ac.checkGen++
	gen := ac.checkGen
	ctx, cancel := context.WithCancel(c.ctx)
	ac.checkCancel = cancel
	ac.checkTimer = c.ser.AfterFunc(h.hc.Timeout, func() {
		ac.onHealthResult(gen, fmt.Errorf("%w after %v", errHealthTimeout, h.hc.Timeout))
	})
	addr := *ac.addr.Load()
	c.goDetached(func() {
		err := h.hc.Checker.Check(ctx, addr, h.service)
		c.ser.Schedule(func() { ac.onHealthResult(gen, err) })
	})
}

// onHealthResult applies one check's result (gRFC A17 with thresholds): the
// first answer decides at once; after that, UnhealthyThreshold failures in
// a row make a passing backend failing, and HealthyThreshold passes in a
// row make a failing one passing. Then the next check is scheduled.
func (ac *addrConn) onHealthResult(gen int, err error) {
	if ac.closed || gen != ac.checkGen {
		return // stale: the check was stopped, timed out or answered
	}
	c := ac.c
	h := c.health
	ac.checkGen++ // a later answer to this check is stale
	ac.checks++
	ac.checkCancel()
	ac.checkCancel = nil
	ac.checkTimer.Stop()
	ac.checkTimer = nil
	addr := ac.addr.Load().Addr
	ac.noteCheck(err)
	if errors.Is(err, ErrHealthCheckUnimplemented) {
		c.logger.Error("the backend does not implement health checking; treating it as healthy and not checking again", "addr", addr, "error", err)
		ac.setVerdict(healthPassing, nil)
		return
	}
	if err == nil {
		ac.passes, ac.fails = ac.passes+1, 0
		if ac.verdict == healthUnknown || (ac.verdict == healthFailing && ac.passes >= h.hc.HealthyThreshold) {
			ac.setVerdict(healthPassing, nil)
		}
	} else {
		ac.passes, ac.fails = 0, ac.fails+1
		switch {
		case ac.verdict == healthUnknown || (ac.verdict == healthPassing && ac.fails >= h.hc.UnhealthyThreshold):
			ac.setVerdict(healthFailing, err)
		case ac.verdict == healthFailing:
			ac.verdictErr = err
		}
	}
	ac.checkTimer = c.ser.AfterFunc(ac.jittered(h.hc), func() {
		ac.checkTimer = nil
		ac.startHealth()
	})
}

// setVerdict records a change of verdict and tells the handles.
func (ac *addrConn) setVerdict(v healthVerdict, err error) {
	if v == ac.verdict {
		return
	}
	prev := ac.verdict
	ac.verdict, ac.verdictErr = v, err
	ac.healthy.Store(v == healthPassing)
	if v == healthFailing {
		ac.c.metrics.healthFailing.Add(1)
	} else {
		ac.c.metrics.healthPassing.Add(1)
	}
	switch {
	case v == healthFailing:
		ac.c.logger.Warn("backend unhealthy", "addr", ac.addr.Load().Addr, "error", err)
	case prev == healthFailing:
		ac.c.logger.Info("backend healthy again", "addr", ac.addr.Load().Addr)
	default:
		ac.c.logger.Debug("backend healthy", "addr", ac.addr.Load().Addr)
	}
	ac.notify()
}

// jittered returns the interval to the next check, spread by the jitter
// with the channel's seeded randomness.
func (ac *addrConn) jittered(hc HealthCheck) time.Duration {
	if hc.Jitter == 0 {
		return hc.Interval
	}
	return time.Duration(float64(hc.Interval) * (1 + hc.Jitter*(2*ac.c.rand.Float64()-1)))
}

// viewFor returns the state handle sc sees: the connection's own state,
// unless sc asked for health checks, health checking is on and the
// connection is READY; then CONNECTING until the first check answers,
// READY while passing and TRANSIENT_FAILURE while failing (gRFC A17).
func (ac *addrConn) viewFor(sc *SubConn) (lb.ConnectivityState, error) {
	if ac.state != lb.Ready || !sc.wantsHealth || !ac.gated.Load() {
		return ac.state, ac.err
	}
	switch ac.verdict {
	case healthPassing:
		return lb.Ready, nil
	case healthFailing:
		return lb.TransientFailure, fmt.Errorf("conn: health check of %s: %w", ac.addr.Load().Addr, ac.verdictErr)
	}
	return lb.Connecting, nil
}

// notify delivers to every handle the state it sees.
func (ac *addrConn) notify() {
	for sc := range ac.handles {
		sc.setState(ac.viewFor(sc))
	}
}
