package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/internal/runloop"
)

// errLookupTimeout is the cancellation cause of a lookup that ran out of
// time.
var errLookupTimeout = errors.New("lookup timed out")

// resolverConfig is what Build hands to a new dnsResolver.
type resolverConfig struct {
	host, port string
	server     string // the DNS server the authority names; "" for the system's
	cfg        config
	lookup     LookupFunc
	cc         resolver.ClientConn
	clock      clock.Clock
	logger     *slog.Logger
	rand       *rand.Rand // owned by the resolver's goroutine
}

// dnsResolver resolves one host name from the goroutine of its
// [runloop.Loop]. The fields of resolverConfig are set by start and
// read-only afterwards; the loop's goroutine is the only one that calls the
// ClientConn and the only writer of desc.
type dnsResolver struct {
	resolverConfig
	loop *runloop.Loop
	// desc is what Describe returns, replaced by run after each resolution.
	desc atomic.Pointer[resolver.Description]
}

func start(rc resolverConfig) *dnsResolver {
	r := &dnsResolver{resolverConfig: rc}
	r.describe(nil, -1)
	r.loop = runloop.Start(rc.clock, r.run)
	return r
}

// Describe says which host the resolver looks up and where, how often,
// how many addresses it published last, and the problem that stands, if
// any: a lookup that failed (an error, a timeout, garbage, an empty
// answer) or an update the channel refused, while the last good addresses
// stay in force. It is safe for concurrent use.
func (r *dnsResolver) Describe() resolver.Description { return *r.desc.Load() }

// describe records what Describe returns: published is the number of
// addresses published last (-1 before any), problem the one that stands
// (nil for none). Start and run only.
func (r *dnsResolver) describe(problem error, published int) {
	server := r.server
	if server == "" {
		server = "the system's"
	}
	d := resolver.Description{Facts: []resolver.Fact{
		{Name: "host", Value: net.JoinHostPort(r.host, r.port)},
		{Name: "DNS server", Value: server},
		{Name: "poll interval", Value: r.cfg.pollInterval.String()},
		{Name: "min resolution interval", Value: r.cfg.minInterval.String()},
	}}
	if published >= 0 {
		d.Facts = append(d.Facts, resolver.Fact{Name: "addresses published", Value: strconv.Itoa(published)})
	}
	if problem != nil {
		d.LastError = problem.Error()
	}
	r.desc.Store(&d)
}

// ResolveNow asks for a resolution, subject to the minimum interval. It
// never blocks; requests made before a resolution starts coalesce into it.
func (r *dnsResolver) ResolveNow() { r.loop.ResolveNow() }

// Close cancels the lookup in flight and returns promptly: a lookup that
// ignores its context is left to finish by itself, and its result is
// dropped. Nothing is reported after Close returns.
func (r *dnsResolver) Close() { r.loop.Close() }

// run resolves, publishes, and waits for the next resolution until Close.
//
// Each timer is made in one clock operation before the ClientConn is
// called, so an observer of that call (a test advancing a mock clock) sees
// a deadline that no longer moves: the floor and the poll interval run from
// the start of a resolution, the backoff from its end.
func (r *dnsResolver) run(l *runloop.Loop) {
	failures := 0
	published := -1 // addresses in the last accepted update
	for {
		// This resolution answers every ResolveNow made before it starts.
		l.ForgetResolveNow()
		earliestNext := l.Timer(r.cfg.minInterval)
		nextPoll := l.Timer(r.cfg.pollInterval)
		addrs, ok, err := r.resolve(l)
		if !ok {
			earliestNext.Stop()
			nextPoll.Stop()
			return // closed: report nothing
		}
		backoff := r.cfg.backoff.Delay(failures, r.rand)
		retry := l.Timer(backoff)
		if err == nil {
			r.describe(nil, len(addrs))
			if err = r.cc.UpdateState(resolver.State{Addresses: addrs}); err != nil {
				err = fmt.Errorf("dns: channel rejected the addresses of %q: %w", r.host, err)
				r.describe(err, published)
			} else {
				published = len(addrs)
			}
		} else {
			// The last good addresses stay in force; the snapshot says why
			// they are not fresh.
			keep := "keeping the last good addresses"
			if published < 0 {
				keep = "no address published yet"
			}
			r.describe(fmt.Errorf("%w; %s", err, keep), published)
			r.cc.ReportError(err)
		}
		if err != nil {
			earliestNext.Stop()
			nextPoll.Stop()
			failures++
			r.logger.Warn("dns: resolution failed; retrying after backoff", "host", r.host, "error", err, "failures", failures, "backoff", backoff)
			if !l.Sleep(retry) {
				return
			}
			continue
		}
		retry.Stop()
		failures = 0
		r.logger.Debug("dns: resolved", "host", r.host, "addresses", len(addrs))
		if l.Wait(nextPoll) == runloop.Closed || !l.Sleep(earliestNext) {
			return
		}
	}
}

// resolve runs one lookup, bounded by the lookup timeout and by Close. It
// reports false in ok, at once, when Close comes first, even if the lookup
// function ignores its context.
func (r *dnsResolver) resolve(l *runloop.Loop) (addrs []resolver.Address, ok bool, err error) {
	res, ok := runloop.Do(l, func(ctx context.Context) lookupResult {
		ips, err := r.lookupWithTimeout(ctx)
		return lookupResult{ips, err}
	})
	if !ok {
		return nil, false, nil
	}
	if res.err != nil {
		return nil, true, res.err
	}
	addrs = make([]resolver.Address, len(res.ips))
	for i, ip := range res.ips {
		addrs[i] = resolver.Address{Addr: net.JoinHostPort(ip.Unmap().String(), r.port)}
	}
	return addrs, true, nil
}

// lookupResult is what one lookup returns.
type lookupResult struct {
	ips []netip.Addr
	err error
}

// lookupWithTimeout runs the lookup function under the lookup timeout,
// which runs on the resolver's clock.
func (r *dnsResolver) lookupWithTimeout(parent context.Context) ([]netip.Addr, error) {
	ctx, cancel := context.WithCancelCause(parent)
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
		return nil, fmt.Errorf("dns: lookup of %q returned no A or AAAA record: %w", r.host, resolver.ErrNoAddresses)
	}
	return ips, nil
}
