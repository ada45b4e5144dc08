package conn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/lbkit/lbkit/lb/resolver"
)

// Defaults of [HealthCheck].
const (
	// DefaultHealthCheckInterval is the time from one check's result to
	// the next check.
	DefaultHealthCheckInterval = 10 * time.Second
	// DefaultHealthCheckTimeout bounds each check.
	DefaultHealthCheckTimeout = 2 * time.Second
	// DefaultUnhealthyThreshold is how many checks in a row must fail for
	// a healthy backend to become unhealthy.
	DefaultUnhealthyThreshold = 3
	// DefaultHealthyThreshold is how many checks in a row must pass for an
	// unhealthy backend to become healthy again.
	DefaultHealthyThreshold = 2
	// DefaultHealthCheckJitter spreads each interval over ±10 % of itself.
	DefaultHealthCheckJitter = 0.1
)

// HealthChecker judges whether one backend is healthy.
//
// Check runs on goroutines of the channel's, concurrently for different
// backends (and for every channel given the same checker), so an
// implementation must be safe for concurrent use. For one backend the
// channel waits for one check at a time; but a check that overruns its
// timeout is abandoned with its context cancelled, and may still be
// running when the next check of that backend starts.
type HealthChecker interface {
	// Check checks the backend at addr for service (the service config's
	// healthCheckConfig.serviceName, or "" without one) and returns nil if
	// it is healthy. It must return when ctx ends. A checker that finds the
	// backend does not implement health checking returns an error wrapping
	// [ErrHealthCheckUnimplemented]: the backend is then treated as healthy
	// and not checked again (gRFC A17).
	Check(ctx context.Context, addr resolver.Address, service string) error
}

// HealthCheckFunc is a HealthChecker written as a function, for anything
// the built-in checkers do not do, such as (*sql.DB).PingContext on a
// connection pool to the backend.
type HealthCheckFunc func(ctx context.Context, addr resolver.Address, service string) error

// Check calls f.
func (f HealthCheckFunc) Check(ctx context.Context, addr resolver.Address, service string) error {
	return f(ctx, addr, service)
}

// ErrHealthCheckUnimplemented is wrapped by a checker's error when the
// backend does not implement health checking (gRPC's UNIMPLEMENTED): the
// SubConn is then treated as healthy, and an error is logged.
var ErrHealthCheckUnimplemented = errors.New("conn: the backend does not implement health checking")

// HealthCheck configures active health checking (gRFC A17, "Client-Side
// Health Checking"), given to [WithHealthCheck]. A SubConn whose policy
// asks for health checking ([lb.NewSubConnOptions].HealthCheck) is, once
// connected, CONNECTING until its first check, READY while checks pass and
// TRANSIENT_FAILURE while they fail; only a READY SubConn is picked. While
// such a connection backs off after a failed dial, the checker probes it
// every Interval (the first probe one Interval after the failure), and the
// first passing probe ends the backoff: the policy dials it at once, so a
// restarted backend takes traffic within one Interval plus one connection
// attempt, however long the backoff had grown. Every interval and timeout
// runs on the channel's clock; the jitter comes from the channel's seeded
// randomness.
type HealthCheck struct {
	// Checker checks a backend. If nil, it is [TCPHealthCheck].
	Checker HealthChecker
	// Interval is the time from one check's result to the next check. If
	// zero, it is [DefaultHealthCheckInterval].
	Interval time.Duration
	// Timeout bounds each check; a check that outlasts it fails. If zero,
	// it is [DefaultHealthCheckTimeout].
	Timeout time.Duration
	// UnhealthyThreshold is how many checks in a row must fail for a
	// healthy backend to become unhealthy. If zero, it is
	// [DefaultUnhealthyThreshold].
	UnhealthyThreshold int
	// HealthyThreshold is how many checks in a row must pass for an
	// unhealthy backend to become healthy. If zero, it is
	// [DefaultHealthyThreshold]. A backend's first check decides its state
	// at once, whatever the thresholds: healthy if it passes.
	HealthyThreshold int
	// Jitter spreads each interval uniformly over ±Jitter of itself, from
	// 0 to 1. If zero, it is [DefaultHealthCheckJitter]; a negative value
	// means none.
	Jitter float64
	// ServiceConfigOnly checks only while the service config sets
	// healthCheckConfig.serviceName, as gRPC does; the option then only
	// says how to check. If false, checking is on whatever the service
	// config says.
	ServiceConfigOnly bool
}

// validate checks h's fields, naming the bad one.
func (h HealthCheck) validate() error {
	var errs []error
	if h.Interval < 0 {
		errs = append(errs, fmt.Errorf("HealthCheck.Interval: must be >= 0, got %v", h.Interval))
	}
	if h.Timeout < 0 {
		errs = append(errs, fmt.Errorf("HealthCheck.Timeout: must be >= 0, got %v", h.Timeout))
	}
	if h.UnhealthyThreshold < 0 {
		errs = append(errs, fmt.Errorf("HealthCheck.UnhealthyThreshold: must be >= 0, got %d", h.UnhealthyThreshold))
	}
	if h.HealthyThreshold < 0 {
		errs = append(errs, fmt.Errorf("HealthCheck.HealthyThreshold: must be >= 0, got %d", h.HealthyThreshold))
	}
	if h.Jitter > 1 {
		errs = append(errs, fmt.Errorf("HealthCheck.Jitter: must be <= 1, got %v", h.Jitter))
	}
	if err := validateChecker(h.Checker); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("WithHealthCheck: %w", err)
	}
	return nil
}

// validateChecker reports a checker that could never work: a nil function
// or pointer (which would crash a check's goroutine) or an
// [HTTPHealthCheck] whose fields are wrong.
func validateChecker(c HealthChecker) error {
	switch c := c.(type) {
	case HealthCheckFunc:
		if c == nil {
			return errors.New("HealthCheck.Checker: a nil HealthCheckFunc")
		}
	case *HTTPHealthCheck:
		if c == nil {
			return errors.New("HealthCheck.Checker: a nil *HTTPHealthCheck")
		}
		return c.validate()
	case HTTPHealthCheck:
		return c.validate()
	}
	return nil
}

// withDefaults returns h with every zero field set to its default.
func (h HealthCheck) withDefaults() HealthCheck {
	if h.Checker == nil {
		h.Checker = TCPHealthCheck()
	}
	if h.Interval == 0 {
		h.Interval = DefaultHealthCheckInterval
	}
	if h.Timeout == 0 {
		h.Timeout = DefaultHealthCheckTimeout
	}
	if h.UnhealthyThreshold == 0 {
		h.UnhealthyThreshold = DefaultUnhealthyThreshold
	}
	if h.HealthyThreshold == 0 {
		h.HealthyThreshold = DefaultHealthyThreshold
	}
	switch {
	case h.Jitter == 0:
		h.Jitter = DefaultHealthCheckJitter
	case h.Jitter < 0:
		h.Jitter = 0
	}
	return h
}

// TCPHealthCheck returns a checker that passes when a TCP connection (or a
// Unix socket's) to the backend can be made; it closes the connection at
// once.
func TCPHealthCheck() HealthChecker {
	return HealthCheckFunc(func(ctx context.Context, addr resolver.Address, _ string) error {
		c, err := dialBackend(ctx, net.Dialer{}, addr)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// HTTPHealthCheck is a checker that sends GET requests and passes on an
// expected status. Its zero value checks "/" over plain HTTP and expects a
// 2xx status.
type HTTPHealthCheck struct {
	// Path is the request's path (and query). If empty, it is "/".
	Path string
	// Host is the request's Host header and, with TLS, the server name
	// the certificate is checked against and sent as SNI: set it to the
	// name your requests use. If empty, it is the address's ServerName,
	// else its host.
	Host string
	// TLS, when not nil, makes the check HTTPS with this config (cloned;
	// its ServerName is Host unless set).
	TLS *tls.Config
	// MinStatus and MaxStatus bound the expected status, inclusive. A
	// zero MinStatus is 200 and a zero MaxStatus is 299, whatever the
	// other: MinStatus 204 alone expects 204 to 299, MaxStatus 399 alone
	// 200 to 399. Each must be an HTTP status (100 to 599), and
	// MinStatus no more than MaxStatus.
	MinStatus, MaxStatus int
}

// statusRange returns the inclusive range of statuses that pass.
func (h HTTPHealthCheck) statusRange() (lo, hi int) {
	lo, hi = h.MinStatus, h.MaxStatus
	if lo == 0 {
		lo = 200
	}
	if hi == 0 {
		hi = 299
	}
	return lo, hi
}

// validate reports the fields of h that make every check fail, or pass
// for the wrong reason, naming each.
func (h HTTPHealthCheck) validate() error {
	var errs []error
	for _, f := range []struct {
		name  string
		value int
	}{{"MinStatus", h.MinStatus}, {"MaxStatus", h.MaxStatus}} {
		if f.value != 0 && (f.value < 100 || f.value > 599) {
			errs = append(errs, fmt.Errorf("HTTPHealthCheck.%s: %d is not an HTTP status (100 to 599)", f.name, f.value))
		}
	}
	if lo, hi := h.statusRange(); lo > hi {
		var dflt string
		if h.MaxStatus == 0 {
			dflt = " (the default)"
		}
		errs = append(errs, fmt.Errorf("HTTPHealthCheck.MinStatus: %d is above MaxStatus %d%s: no status would pass", lo, hi, dflt))
	}
	switch {
	case strings.Contains(h.Host, "://"):
		errs = append(errs, fmt.Errorf("HTTPHealthCheck.Host: want a host[:port], got the URL %q (set TLS for HTTPS)", h.Host))
	case strings.ContainsAny(h.Host, "/?#@ "):
		errs = append(errs, fmt.Errorf("HTTPHealthCheck.Host: want a host[:port], got %q (put the path in Path)", h.Host))
	}
	return errors.Join(errs...)
}

// Check sends one GET request to addr, over a connection made for it and
// closed afterwards, and passes if the status is expected. service is not
// used. A check with invalid fields (see [HTTPHealthCheck.MinStatus] and
// Host; [WithHealthCheck] refuses them) fails with the reason.
func (h HTTPHealthCheck) Check(ctx context.Context, addr resolver.Address, _ string) error {
	if err := h.validate(); err != nil { // a checker used without New's validation
		return err
	}
	host := h.host(addr)
	tr := &http.Transport{
		DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return dialBackend(ctx, net.Dialer{}, addr) },
		DisableKeepAlives: true,
		Proxy:             nil,
	}
	scheme := "http"
	if h.TLS != nil {
		scheme = "https"
		cfg := h.TLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = hostOnly(host)
		}
		tr.TLSClientConfig = cfg
	}
	defer tr.CloseIdleConnections()
	path := h.Path
	if path == "" || !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+host+path, nil)
	if err != nil {
		return fmt.Errorf("health check request: %w", err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	lo, hi := h.statusRange()
	if resp.StatusCode < lo || resp.StatusCode > hi {
		return fmt.Errorf("health check GET %s: status %d, want %d to %d", path, resp.StatusCode, lo, hi)
	}
	return nil
}

// host returns the Host of h's requests to addr.
func (h HTTPHealthCheck) host(addr resolver.Address) string {
	switch {
	case h.Host != "":
		return h.Host
	case addr.ServerName != "":
		return addr.ServerName
	case strings.HasPrefix(addr.Addr, "/") || strings.HasPrefix(addr.Addr, "@"):
		return "localhost"
	}
	return addr.Addr
}

// hostOnly strips a port from host.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}
