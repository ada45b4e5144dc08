package nethttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
)

// ErrClientClosed is wrapped, with the host's name, by the error of a
// request sent through a [Client] after its Close, or cut off by it.
var ErrClientClosed = errors.New("nethttp: client closed")

// Client is an http.Client for many services: it routes each request by
// its URL's scheme and host ("http://users", "https://billing:8443") to a
// channel of that host's own, made on the host's first request from its
// [Route], and closed with its pooled connections once the host has had
// no request in flight for the idle timeout ([WithIdleTimeout]).
//
// The embedded *http.Client is an ordinary one: pass it wherever an
// *http.Client is expected, and set its Timeout, Jar and CheckRedirect
// before use as you would (a redirect to another host goes through that
// host's route). Its Transport is the client's router; replacing it
// bypasses the routing.
//
// # Concurrency
//
// All methods are safe for concurrent use. Concurrent first requests to a
// host make one channel, which they all use. Close may race with requests:
// a request sent after Close fails with [ErrClientClosed], one in flight
// fails (its connections are closed), and when Close returns no goroutine
// or connection of the client is left (but for response bodies never
// closed: see Close).
type Client struct {
	*http.Client
	r *router
}

// NewClient returns a Client configured by opts. An invalid option (a
// malformed [WithRoute] host, a negative idle timeout, a nil option) is an
// error naming it.
func NewClient(opts ...ClientOption) (*Client, error) {
	cfg := clientConfig{routeFunc: DefaultRoute, idleTimeout: DefaultHostIdleTimeout}
	for i, o := range opts {
		if o == nil {
			cfg.errs = append(cfg.errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		o.applyClient(&cfg)
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, fmt.Errorf("nethttp: NewClient: %w", err)
	}
	clk := cfg.clock
	if clk == nil {
		clk = clock.New()
	}
	r := &router{cfg: cfg, clock: clk, ser: lb.NewSerializer(clk)}
	return &Client{Client: &http.Client{Transport: r}, r: r}, nil
}

// Close closes every host's channel and every connection the client
// pooled, in flight or idle, and stops the idle timers; requests still in
// flight fail. Later requests fail with [ErrClientClosed]. It returns the
// channels' Close errors; later calls do nothing and return nil. As with
// any http.Client, a response body its caller never closes keeps
// net/http's goroutine for it (reading it fails) until it is closed.
func (c *Client) Close() error { return c.r.close() }

// WaitReady makes a channel for each host not yet open (hosts are written
// "scheme://host[:port]", as in [WithRoute]) and waits until each can
// serve: its channel has a READY connection. It returns nil then. A host
// that cannot serve is named in the error it returns, with why: at once
// for a malformed host or a route that fails, and once ctx ends for a
// channel with no READY connection (its last pick error, such as a DNS or
// connection error). The hosts count as in use while it waits, so the
// idle timeout does not close them.
func (c *Client) WaitReady(ctx context.Context, hosts ...string) error {
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, s := range hosts {
		key, err := parseHostKey(s)
		if err != nil {
			errs[i] = fmt.Errorf("nethttp: WaitReady: host %q: %w", s, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.r.waitReady(ctx, key)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Channel returns the open channel of host, written "scheme://host[:port]",
// for its snapshot or the debug page; false if the host has none now (it
// was never used, or has been closed as idle). It makes no channel. The
// client may close the channel later (idle timeout, Close).
func (c *Client) Channel(host string) (*conn.Channel, bool) {
	key, err := parseHostKey(host)
	if err != nil {
		return nil, false
	}
	return c.r.channel(key)
}

// channel returns the channel of the host of key, if it is open.
func (r *router) channel(key string) (*conn.Channel, bool) {
	h, ok := r.live(key)
	if !ok || !h.isMade() || h.err != nil || r.closed.Load() {
		return nil, false
	}
	return h.ch, true
}

// Settle waits until every idle timer due on the client's clock has run,
// closing what it closes, or until ctx ends (returning its error). It is
// for tests that drive the client with a mock clock ([WithClock]), as
// conn.Channel.Settle is for a channel.
func (c *Client) Settle(ctx context.Context) error {
	return c.r.ser.WaitIdle(ctx, c.r.clock.Now())
}

// router is a Client's RoundTripper: the hosts, by key.
type router struct {
	cfg   clientConfig
	clock clock.Clock
	ser   *lb.Serializer // runs the idle checks

	// hosts holds each host by key, from when a request adds it until it
	// fails to be made or is closed as idle. A request finds its host
	// there without a lock; adding one takes mu.
	hosts  sync.Map
	closed atomic.Bool
	mu     sync.Mutex     // serializes adding hosts with Close
	making sync.WaitGroup // hosts being made; Close waits for them
}

// host is one host's channel and Transport.
type host struct {
	key  string        // scheme://host
	made chan struct{} // closed once ch and tr, or err, are set

	ch  *conn.Channel
	tr  *Transport
	err error // why the host has no channel (it left the router's map)

	// uses counts the requests in flight (from acquire until the response
	// body is read or closed) and WaitReady calls; the idle check retires
	// it when none has been for the idle timeout.
	uses    useCount
	lastUse atomic.Int64 // when the last use ended, in ns on the client's clock
	armed   atomic.Bool  // an idle check is pending
}

// usedAt moves lastUse to now, unless a use ended later.
func (h *host) usedAt(now int64) {
	for {
		old := h.lastUse.Load()
		if now <= old || h.lastUse.CompareAndSwap(old, now) {
			return
		}
	}
}

// isMade reports whether h's channel and Transport, or its error, are set.
func (h *host) isMade() bool {
	select {
	case <-h.made:
		return true
	default:
		return false
	}
}

// RoundTrip sends req through its host's Transport, making the host's
// channel on first use.
func (r *router) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || req.URL.Host == "" {
		closeBody(req)
		return nil, fmt.Errorf("nethttp: %s %s: the URL has no host to route by", req.Method, req.URL)
	}
	h, err := r.acquire(req.Context(), hostKey(req.URL))
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := h.tr.RoundTrip(req)
	if err != nil {
		r.release(h)
		return nil, r.interrupted(h, err)
	}
	resp.Body = withDone(resp.Body, func(error) { r.release(h) })
	return resp, nil
}

// interrupted adds ErrClientClosed to err when Close has run: err is
// then Close's doing.
func (r *router) interrupted(h *host, err error) error {
	if r.closed.Load() {
		return fmt.Errorf("nethttp: host %s: %w: %w", h.key, ErrClientClosed, err)
	}
	return err
}

// acquire returns the host of key, made if need be, counting the caller as
// a use that it ends with release.
func (r *router) acquire(ctx context.Context, key string) (*host, error) {
	for {
		h, mine, err := r.lookup(key)
		if err != nil {
			return nil, err
		}
		if mine {
			r.make(h)
		}
		if !h.isMade() { // else ctx does not matter: select would pick at random
			select {
			case <-h.made:
			case <-ctx.Done():
				return nil, fmt.Errorf("nethttp: host %s: waiting for its channel to be made: %w", key, ctx.Err())
			}
		}
		if h.err != nil {
			return nil, h.err
		}
		if h.uses.acquire() {
			return h, nil
		}
		// Retired by the idle check, which takes it out of the map: make
		// another.
	}
}

// lookup returns the host of key, or a new one the caller must make
// (mine).
func (r *router) lookup(key string) (h *host, mine bool, err error) {
	if h, ok := r.live(key); ok && !r.closed.Load() {
		return h, false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return nil, false, fmt.Errorf("nethttp: host %s: %w", key, ErrClientClosed)
	}
	if h, ok := r.live(key); ok {
		return h, false, nil // another request added it
	}
	h = &host{key: key, made: make(chan struct{})}
	r.hosts.Store(key, h) // replacing one the idle check is closing
	r.making.Add(1)
	return h, true, nil
}

// live returns the host of key unless there is none or the idle check is
// closing it.
func (r *router) live(key string) (*host, bool) {
	v, ok := r.hosts.Load(key)
	if !ok {
		return nil, false
	}
	h := v.(*host)
	if h.isMade() && h.uses.isRetired() {
		return nil, false
	}
	return h, true
}

// make makes h's channel and Transport from its route. A host that cannot
// be made leaves the map, so the next request asks its route again; so
// does one whose route function panicked, and the requests waiting for it
// fail rather than wait for ever.
func (r *router) make(h *host) {
	defer r.making.Done()
	h.err = errors.New("the route function panicked") // until build returns
	defer func() {
		if h.err != nil {
			h.err = fmt.Errorf("nethttp: host %s: %w", h.key, h.err)
			r.forget(h)
		}
		close(h.made)
	}()
	h.ch, h.tr, h.err = r.build(h.key)
}

// forget takes h out of the map, unless another host has replaced it.
func (r *router) forget(h *host) {
	r.hosts.CompareAndDelete(h.key, h)
}

// build returns the channel and Transport of the host key.
func (r *router) build(key string) (*conn.Channel, *Transport, error) {
	route, ok := r.cfg.routes[key]
	if !ok {
		scheme, hostport, _ := strings.Cut(key, "://")
		var err error
		if route, err = r.cfg.routeFunc(scheme, hostport); err != nil {
			return nil, nil, fmt.Errorf("no route: %w", err)
		}
	}
	if route.Target == "" {
		return nil, nil, errors.New("the route's Target is empty")
	}
	if err := checkTemplate(route.Transport); err != nil {
		return nil, nil, fmt.Errorf("the route's Transport: %w", err)
	}
	opts := []conn.Option{conn.WithDefaultServiceConfig(DefaultClientServiceConfig)}
	if r.cfg.clock != nil {
		opts = append(opts, conn.WithClock(r.cfg.clock))
	}
	opts = append(append(opts, r.cfg.channelOpts...), route.Options...)
	ch, err := conn.New(route.Target, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("target %q: %w", route.Target, err)
	}
	tr := &Transport{Channel: ch}
	t := route.Transport
	if t == nil {
		t = r.cfg.transport
	}
	if t != nil {
		tr.Base, tr.WaitForReady, tr.Classify, tr.MaxAttempts = t.Base, t.WaitForReady, t.Classify, t.MaxAttempts
		tr.RequestHash, tr.DecodeBinLoadReport = t.RequestHash, t.DecodeBinLoadReport
	}
	return ch, tr, nil
}

// release ends a use of h counted by acquire. The last one arms h's idle
// check, unless one is pending: that one finds the new lastUse and waits
// again.
func (r *router) release(h *host) {
	if r.cfg.idleTimeout == 0 {
		h.uses.release()
		return
	}
	h.usedAt(r.clock.Now().UnixNano())
	if h.uses.release() && h.armed.CompareAndSwap(false, true) {
		r.ser.AfterFunc(r.cfg.idleTimeout, func() { r.idleCheck(h) })
	}
}

// idleCheck, on the serializer, closes h if no use has been in flight
// since the idle timeout, or waits for the rest of it.
func (r *router) idleCheck(h *host) {
	h.armed.Store(false)
	if !h.uses.idle() {
		return // in use: its last release arms the check again
	}
	due := time.Unix(0, h.lastUse.Load()).Add(r.cfg.idleTimeout)
	if wait := due.Sub(r.clock.Now()); wait > 0 {
		if h.armed.CompareAndSwap(false, true) {
			r.ser.AfterFunc(wait, func() { r.idleCheck(h) })
		}
		return
	}
	if !h.uses.retire() {
		return // a request came: its release arms the check again
	}
	r.forget(h)
	_ = h.close()
}

// close closes h's channel, then its pools: no request picks again.
func (h *host) close() error {
	err := h.ch.Close()
	h.tr.closePools()
	if err != nil {
		return fmt.Errorf("nethttp: host %s: %w", h.key, err)
	}
	return nil
}

// close closes every host; see Client.Close.
func (r *router) close() error {
	r.mu.Lock()
	first := r.closed.CompareAndSwap(false, true)
	r.mu.Unlock()
	if !first {
		return nil
	}
	r.making.Wait() // no host is being made or added after this
	r.ser.Close()   // no idle check runs after this
	var hosts []*host
	r.hosts.Range(func(_, v any) bool {
		hosts = append(hosts, v.(*host))
		return true
	})
	slices.SortFunc(hosts, func(a, b *host) int { return strings.Compare(a.key, b.key) })
	var errs []error
	for _, h := range hosts {
		errs = append(errs, h.close())
	}
	return errors.Join(errs...)
}

// CloseIdleConnections closes the idle connections of every host's
// Transport; http.Client.CloseIdleConnections calls it.
func (r *router) CloseIdleConnections() {
	r.hosts.Range(func(_, v any) bool {
		if h := v.(*host); h.isMade() && h.err == nil {
			h.tr.CloseIdleConnections()
		}
		return true
	})
}

// waitReady waits until the host of key can serve; see Client.WaitReady.
func (r *router) waitReady(ctx context.Context, key string) error {
	h, err := r.acquire(ctx, key)
	if err != nil {
		return err
	}
	defer r.release(h)
	picked, err := h.ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
	if err != nil {
		return fmt.Errorf("nethttp: host %s cannot serve: %w", key, err)
	}
	picked.Finish(lb.DoneInfo{Err: errWaitReadyPick})
	return nil
}

// errWaitReadyPick is the outcome of WaitReady's pick, never used.
var errWaitReadyPick = fmt.Errorf("nethttp: WaitReady's pick, not used for a request: %w", lb.ErrRequestNotSent)

var _ http.RoundTripper = (*router)(nil)
