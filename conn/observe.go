package conn

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// endpointStats counts one connection's requests and failures, for the
// snapshot and the per-endpoint metrics. Pickers and request ends update
// it concurrently: atomics only, no allocation.
type endpointStats struct {
	requests, failures   atomic.Uint64
	mRequests, mFailures lb.Counter
}

// init resolves the metric handles for the connection to addr. Runs
// serialized, before any pick can see the connection.
func (s *endpointStats) init(c *Channel, addr string) {
	s.mRequests = c.cfg.metrics.Counter(MetricEndpointRequests, c.target, addr)
	s.mFailures = c.cfg.metrics.Counter(MetricEndpointFailures, c.target, addr)
}

// finished counts a request on the connection that ended with err (nil:
// it succeeded); a request that was not sent does not count.
func (s *endpointStats) finished(err error) {
	if err == nil {
		s.requests.Add(1)
		s.mRequests.Add(1)
		return
	}
	if errors.Is(err, lb.ErrRequestNotSent) {
		return
	}
	s.requests.Add(1)
	s.mRequests.Add(1)
	s.failures.Add(1)
	s.mFailures.Add(1)
}

// describe fills in e's counters and failure rate.
func (s *endpointStats) describe(e *lb.Endpoint) {
	e.Requests, e.Failures = s.requests.Load(), s.failures.Load()
	if e.Requests > 0 {
		rate := float64(e.Failures) / float64(e.Requests)
		e.FailureRate = &rate
	}
}

// noteCheck records a health check's answer (nil: passed) for the
// snapshot. Runs serialized.
func (ac *addrConn) noteCheck(err error) {
	ac.lastCheck = &lb.HealthCheckResult{
		Time:   ac.c.clock.Now(),
		Passed: err == nil || errors.Is(err, ErrHealthCheckUnimplemented),
		Error:  lb.ErrorString(err),
	}
}

// pickFailed counts and records a pick the policy failed with err (a drop
// or a transient failure), and returns err. Not on the READY path: it
// allocates.
func (c *Channel) pickFailed(err error) error {
	c.notePickError(err)
	return c.metrics.pickFailed(err)
}

// notePickError records err as the channel's last failed pick.
func (c *Channel) notePickError(err error) {
	c.lastPickErr.Store(lb.NewTimedError(err, c.clock.Now()))
}

// compactJSON returns raw without insignificant space, or raw itself when
// it does not compact (the parser reports why).
func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// The per-endpoint metrics; docs/observability.md describes each.
var (
	// MetricEndpointRequests counts the requests sent on each endpoint's
	// connection whose end was reported ([PickResult.Finish]).
	MetricEndpointRequests = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.endpoint.requests", Unit: "{request}",
		Description: "Number of requests sent on an endpoint's connection that ended.", Labels: []string{lb.LabelTarget, lb.LabelAddress}})
	// MetricEndpointFailures counts the requests reported failed
	// ([PickResult.Finish]) on each endpoint's connection.
	MetricEndpointFailures = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.endpoint.failures", Unit: "{request}",
		Description: "Number of requests on an endpoint's connection that failed.", Labels: []string{lb.LabelTarget, lb.LabelAddress}})
)
