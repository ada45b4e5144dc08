package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/resolver"
)

// errLookupTimeout is the cancellation cause of a lookup that ran out of
// time.
var errLookupTimeout = errors.New("lookup timed out")

// resolverConfig is what Build hands to a new dnsResolver.
type resolverConfig struct {
	host, port string
	cfg        config
	lookup     LookupFunc
	cc         resolver.ClientConn
	clock      clock.Clock
	logger     *slog.Logger
	rand       *rand.Rand // owned by the resolver's goroutine
}

// dnsResolver resolves one host name on its own goroutine, run. Every field
// is set by start and read-only afterwards; the goroutine is the only one
// that calls the ClientConn.
type dnsResolver struct {
	resolverConfig

	// resolveNow holds at most one pending ResolveNow request, so requests
	// made before a resolution starts coalesce into it.
	resolveNow chan struct{}
	// ctx is cancelled by Close; it is the parent of every lookup.
	ctx    context.Context
	cancel context.CancelFunc
	// done is closed when run returns.
	done chan struct{}
}

func start(rc resolverConfig) *dnsResolver {
	ctx, cancel := context.WithCancel(context.Background())
	r := &dnsResolver{
		resolverConfig: rc,
		resolveNow:     make(chan struct{}, 1),
		ctx:            ctx,
		cancel:         cancel,
		done:           make(chan struct{}),
	}
	go r.run()
	return r
}

// ResolveNow asks for a resolution, subject to the minimum interval. It
// never blocks.
func (r *dnsResolver) ResolveNow() {
	select {
	case r.resolveNow <- struct{}{}:
	default: // one is pending already
	}
}

// Close cancels the lookup in flight and waits for the goroutine to end.
func (r *dnsResolver) Close() {
	r.cancel()
	<-r.done
}

// run resolves, publishes, and waits for the next resolution until Close.
//
// Each deadline is computed from clock readings taken before the
// ClientConn is called, so an observer of that call (a test advancing a mock
// clock) sees a deadline that no longer moves.
func (r *dnsResolver) run() {
	defer close(r.done)
	failures := 0
	for {
		// This resolution answers every ResolveNow made before it starts.
		select {
		case <-r.resolveNow:
		default:
		}
		started := r.clock.Now()
		addrs, err := r.resolve()
		if r.ctx.Err() != nil {
			return // closed: report nothing
		}
		backoff := r.cfg.backoff.Delay(failures, r.rand)
		retryAt := r.clock.Now().Add(backoff)
		if err == nil {
			if err = r.cc.UpdateState(resolver.State{Addresses: addrs}); err != nil {
				err = fmt.Errorf("dns: channel rejected the addresses of %q: %w", r.host, err)
			}
		} else {
			r.cc.ReportError(err)
		}
		var next time.Time
		if err != nil {
			failures++
			next = retryAt
			r.logger.Warn("dns: resolution failed; retrying after backoff", "host", r.host, "error", err, "failures", failures, "backoff", backoff)
		} else {
			failures = 0
			r.logger.Debug("dns: resolved", "host", r.host, "addresses", len(addrs))
			select {
			case <-r.ctx.Done():
				return
			case <-r.resolveNow:
			}
			next = started.Add(r.cfg.minInterval)
		}
		if !r.sleepUntil(next) {
			return
		}
	}
}

// resolve runs one lookup, bounded by the lookup timeout and by Close.
func (r *dnsResolver) resolve() ([]resolver.Address, error) {
	ctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	if d := r.cfg.lookupTimeout; d > 0 {
		t := r.clock.AfterFunc(d, func() { cancel(errLookupTimeout) })
		defer t.Stop()
	}
	ips, err := r.lookup(ctx, r.host)
	if err != nil {
		if errors.Is(context.Cause(ctx), errLookupTimeout) {
			return nil, fmt.Errorf("dns: resolving %q: %w after %v: %w", r.host, errLookupTimeout, r.cfg.lookupTimeout, err)
		}
		return nil, fmt.Errorf("dns: resolving %q: %w", r.host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%w for %q", ErrNoAddresses, r.host)
	}
	addrs := make([]resolver.Address, len(ips))
	for i, ip := range ips {
		addrs[i] = resolver.Address{Addr: net.JoinHostPort(ip.Unmap().String(), r.port)}
	}
	return addrs, nil
}

// sleepUntil waits on the clock until t, and reports false if the resolver
// was closed first. It makes a fresh timer each time: a mock clock's Timer
// must not be Reset after it fired undrained.
func (r *dnsResolver) sleepUntil(t time.Time) bool {
	d := t.Sub(r.clock.Now())
	if d <= 0 {
		return r.ctx.Err() == nil
	}
	timer := r.clock.Timer(d)
	select {
	case <-r.ctx.Done():
		timer.Stop()
		return false
	case <-timer.C:
		return true
	}
}
