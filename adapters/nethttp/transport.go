// Package nethttp balances net/http requests with an lbkit [conn.Channel].
//
// [Transport] is an http.RoundTripper: for each request it picks a READY
// backend from the channel and sends the request there, over a connection
// pool of that backend's own, and reports the outcome to the policy. The
// request itself is not rewritten: its URL keeps the logical host (such as
// my-service), which stays the Host header, the name a TLS certificate is
// verified against and the SNI sent; only the connection goes to the
// picked address (TCP, or a Unix socket for unix: targets).
//
// Each backend has a connection pool of its own while the channel has it;
// once the channel has closed the backend's SubConn (its address left) and
// no request uses the pool, the pool and its connections are dropped at
// the next sweep (see [Transport.CloseIdleConnections]).
//
// # Routing per request
//
// Each pick carries the request's path ([lb.PickInfo].Method), headers
// (Metadata), authority (its Host) and method (HTTPMethod), so a routing
// policy such as xds_routing_experimental (package lb/routing) chooses a
// cluster per request; a pick's [lb.PickResult].Timeout (a route's
// timeout) bounds the request, from the pick to the end of its body, as a
// deadline on the channel's clock.
//
// # One client for many services
//
// [Client] is an http.Client that routes each request by its URL's scheme
// and host to a Transport and channel of that host's own, made on the
// host's first request from its [Route]: the channel's target and the
// settings of the channel and the Transport. [WithRoute] names the route
// of one host, [WithRouteFunc] decides the rest, and [DefaultRoute], the
// default, resolves the host itself through DNS. A host with no request
// in flight for [WithIdleTimeout] (15 minutes by default) has its channel
// and pooled connections closed; [Client.WaitReady] makes the channels of
// the hosts it names and waits until each can serve, or says why not; one
// [Client.Close] closes every channel and connection.
//
// # Concurrency
//
// A Transport is safe for concurrent use, like any http.RoundTripper; so
// is a Client.
package nethttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// DefaultMaxAttempts is how many backends a request is tried on, at most,
// when [Transport].MaxAttempts is zero.
const DefaultMaxAttempts = 3

// Transport sends each request to the backend its Channel picks.
type Transport struct {
	// Channel picks the backend for each request. It must not be nil.
	Channel *conn.Channel
	// Base is the template of each backend's transport: its TLS config,
	// timeouts and pool sizes apply; its dialing and proxy do not (each
	// backend's transport dials that backend directly). If nil,
	// http.DefaultTransport's settings are used.
	Base *http.Transport
	// WaitForReady makes requests wait through TRANSIENT_FAILURE for a
	// backend instead of failing at once. Default: fail fast.
	WaitForReady bool
	// Classify decides, for the policy, whether a request failed; see
	// [Classifier]. If nil, [DefaultClassifier] is used: connection
	// errors and 5xx responses are failures. It changes only what the
	// policy hears: the caller still gets the response (or error)
	// unchanged.
	Classify Classifier
	// MaxAttempts bounds how many backends one request is tried on. A
	// request is tried on another backend when its body can be sent again
	// (none, or GetBody set) and either its connection could not be made,
	// so nothing of it was sent, or it is replayable as net/http defines
	// it (GET, HEAD, OPTIONS or TRACE, or an Idempotency-Key or
	// X-Idempotency-Key header) and its connection was lost before any
	// response came (EOF, a reset): a backend that stops under a request
	// sent on a fresh connection, which net/http does not send again. If
	// zero, it is [DefaultMaxAttempts]; 1 never tries again.
	MaxAttempts int
	// RequestHash, when not nil, computes each request's hash for
	// hash-based policies (ring_hash_experimental): requests with equal
	// hashes go to the same backend while it can serve. It returns false
	// when the request has nothing to hash; see [HashHeader],
	// [HashCookie] and [HashPath]. If nil, requests carry no hash, and
	// ring_hash needs its requestHashHeader (the request's headers always
	// reach the policy). Under xds_routing_experimental, a route with hash
	// policies (gRFC A42) replaces this hash with its own.
	RequestHash func(*http.Request) (uint64, bool)
	// DecodeBinLoadReport, when not nil, decodes the BIN form of a
	// response's [LoadReportHeader] (a serialized ORCA OrcaLoadReport, which
	// needs protobuf: adapters/grpcgo's ParseLoadReport is one); see
	// [ParseLoadReportWith]. If nil, a BIN report is malformed: ignored
	// and counted, as the TEXT and JSON forms' errors are.
	DecodeBinLoadReport BinLoadReportDecoder

	backends sync.Map     // resolver address → *backend
	size     atomic.Int64 // entries in backends
	requests atomic.Int64 // requests since the last sweep
	shut     atomic.Bool  // closePools has run: every pool is dropped
}

// backend is the connection pool of one backend address, and the SubConn
// a request last reached it through: once the channel has closed that
// SubConn (the address left the channel) and no request uses the pool,
// a sweep retires it.
type backend struct {
	tr *http.Transport
	sc atomic.Pointer[conn.SubConn]
	// users counts the requests using the pool, from backendFor until
	// their response body is closed (or their round trip failed); once
	// retired, it admits no more.
	users useCount

	// conns are the pool's open connections. A retired pool closes them
	// all: an HTTP/2 connection may still be finishing a stream whose
	// body its caller has read, and nothing could close it later.
	mu      sync.Mutex
	conns   map[*trackedConn]struct{}
	dropped bool // retired: conns closed, and any later one at once
}

// trackedConn is a pool's connection, which it forgets when closed.
type trackedConn struct {
	net.Conn
	b *backend
}

func (c *trackedConn) Close() error {
	c.b.mu.Lock()
	delete(c.b.conns, c)
	c.b.mu.Unlock()
	return c.Conn.Close()
}

// track adds c to b's connections, or closes it if b is retired.
func (b *backend) track(c net.Conn) (net.Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped {
		c.Close()
		return nil, errors.New("nethttp: the backend's pool was dropped: it left the channel")
	}
	tc := &trackedConn{Conn: c, b: b}
	b.conns[tc] = struct{}{}
	return tc, nil
}

// closeAll closes b's pool and every connection it has: b is retired, so
// no request uses them.
func (b *backend) closeAll() {
	b.tr.CloseIdleConnections()
	b.mu.Lock()
	b.dropped = true
	conns := make([]*trackedConn, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// useCount counts the users of something that is retired once it has
// none: a backend's pool (retired by a sweep) or a [Client]'s host
// (retired when idle). Its zero value has no user and is not retired.
type useCount struct{ n atomic.Int64 }

// retired marks a useCount whose thing has been retired.
const retired = int64(1) << 62

// acquire counts a user, unless the thing is retired.
func (u *useCount) acquire() bool {
	for {
		n := u.n.Load()
		if n&retired != 0 {
			return false
		}
		if u.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release ends a use counted by acquire, and reports whether it was the
// last one.
func (u *useCount) release() bool { return u.n.Add(-1) == 0 }

// retire marks the thing retired if it has no user, and reports whether it
// did: from then on acquire fails.
func (u *useCount) retire() bool { return u.n.CompareAndSwap(0, retired) }

// idle reports whether there is no user (and the thing is not retired).
func (u *useCount) idle() bool { return u.n.Load() == 0 }

// isRetired reports whether the thing is retired.
func (u *useCount) isRetired() bool { return u.n.Load()&retired != 0 }

// backendKey is the context key under which a request sent to a backend
// carries that backend's address.
type backendKey struct{}

// BackendOf returns the address of the backend that served resp (or to
// which its request was sent), and false if resp did not come through a
// Transport.
func BackendOf(resp *http.Response) (resolver.Address, bool) {
	if resp == nil || resp.Request == nil {
		return resolver.Address{}, false
	}
	a, ok := resp.Request.Context().Value(backendKey{}).(resolver.Address)
	return a, ok
}

// backendFor returns the backend at addr, reached through sc, counting
// the caller as a user (the caller releases it), and making it on first
// use. Every max(sweepEvery, 4 * backends) requests, one of them sweeps
// away the backends the channel no longer has.
func (t *Transport) backendFor(sc *conn.SubConn, addr resolver.Address) *backend {
	if n := t.requests.Add(1); n >= max(sweepEvery, 4*t.size.Load()) && t.requests.CompareAndSwap(n, 0) {
		t.sweep()
	}
	for {
		if v, ok := t.backends.Load(addr.Addr); ok {
			b := v.(*backend)
			if !b.users.acquire() {
				// Being dropped: take it out (if its sweep has not yet)
				// and make another.
				if t.backends.CompareAndDelete(addr.Addr, b) {
					t.size.Add(-1)
				}
				continue
			}
			// A request through a SubConn closed since its pick must not
			// hide the live one from sweeps.
			if cur := b.sc.Load(); cur != sc && !sc.Closed() {
				b.sc.Store(sc)
			}
			return b
		}
		b := t.newBackend(sc, addr)
		b.users.n.Store(1)
		if _, loaded := t.backends.LoadOrStore(addr.Addr, b); loaded {
			continue // another request made it first: use that one
		}
		t.size.Add(1)
		if t.shut.Load() {
			// closePools ran, and may not have seen b: a request that
			// picked before its Client closed the channel dials nothing
			// that stays open.
			b.closeAll()
		}
		return b
	}
}

// newBackend returns a backend for addr with a pool of its own.
func (t *Transport) newBackend(sc *conn.SubConn, addr resolver.Address) *backend {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	b := &backend{tr: base.Clone(), conns: make(map[*trackedConn]struct{})}
	b.sc.Store(sc)
	b.tr.Proxy = nil
	b.tr.DialTLSContext = nil // TLS is layered over DialContext, for the URL's host
	dialer := &net.Dialer{}
	b.tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, err := conn.DialAddress(ctx, dialer, addr)
		if err != nil {
			return nil, err
		}
		return b.track(c)
	}
	return b
}

// sweepEvery is the fewest requests between two sweeps.
const sweepEvery = 1024

// sweep drops the backends whose SubConn the channel has closed (the
// address left the channel) and that no request is using, closing all
// their connections. A backend still in use stays until a sweep after its
// last response body is closed.
func (t *Transport) sweep() {
	t.backends.Range(func(key, v any) bool {
		b := v.(*backend)
		if b.sc.Load().Closed() && b.users.retire() {
			if t.backends.CompareAndDelete(key, b) {
				t.size.Add(-1)
			}
			b.closeAll()
		}
		return true
	})
}

// closePools closes every backend's pool and connection, idle or not,
// for a [Client] closing t's host: t's channel is closed, so no request
// will use them again, and one still running fails.
func (t *Transport) closePools() {
	t.shut.Store(true)
	t.backends.Range(func(_, v any) bool {
		v.(*backend).closeAll()
		return true
	})
}

// CloseIdleConnections closes the idle connections of every backend, and
// drops the backends that have left the channel and have no request in
// flight. A Transport keeps one pool per backend address it has sent to
// while the channel has that address (see sweep); a pool with no
// connection costs a few hundred bytes.
func (t *Transport) CloseIdleConnections() {
	t.sweep()
	t.backends.Range(func(_, v any) bool {
		v.(*backend).tr.CloseIdleConnections()
		return true
	})
}

// RoundTrip picks a backend and sends req to it, unchanged, over that
// backend's connections. It calls the pick's Done when the response body
// is closed or read to the end (or at once on error), with the response's
// status code and headers and the error Classify returns (nil: success);
// the body of a 101 Switching Protocols response stays writable, and Done
// comes when it is closed. A
// backend that cannot be reached (a dial error) is reported to the
// channel, which re-checks it, and the request is tried on another backend
// when that is safe (see MaxAttempts); so is a replayable request whose
// connection was lost before its response.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Channel == nil {
		closeBody(req)
		return nil, errors.New("nethttp: Transport.Channel is nil")
	}
	attempts := t.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	var (
		avoid   []*conn.SubConn // backends this request could not reach or lost
		lostErr error           // the last attempt's lost connection, if that is why this one is made
	)
	for attempt := 1; ; attempt++ {
		repicks := maxRepicks
		if lostErr != nil {
			repicks = maxLostRepicks
		}
		picked, err := t.pick(req, avoid, repicks)
		if err != nil {
			closeBody(req)
			return nil, fmt.Errorf("nethttp: %s %s: %w", req.Method, req.URL.Redacted(), err)
		}
		if lostErr != nil && slices.Contains(avoid, picked.SubConn) {
			// Only another backend: the one that lost the request may
			// lose it again (or be what loses it).
			picked.Finish(lb.DoneInfo{Err: errRepick})
			closeBody(req)
			return nil, lostErr
		}
		addr := picked.SubConn.Address()
		out, err := outgoing(req, addr, attempt)
		if err != nil {
			picked.Finish(lb.DoneInfo{Err: fmt.Errorf("%w: %w", lb.ErrRequestNotSent, err)})
			return nil, err
		}
		out, cancel := t.withTimeout(out, picked.Timeout)
		b := t.backendFor(picked.SubConn, addr)
		resp, err := b.tr.RoundTrip(out)
		if err == nil {
			resp.Body = withDone(resp.Body, func(err error) {
				cancel()
				b.users.release()
				t.doneWithLoad(picked.Finish, lb.DoneInfo{Err: t.classify(resp, err), Status: resp.StatusCode, Metadata: resp.Header})
			})
			return resp, nil
		}
		cancel()
		b.users.release()
		dialFailed := isDialError(err)
		if dialFailed {
			picked.SubConn.ReportError(err)
		}
		picked.Finish(lb.DoneInfo{Err: t.classify(nil, err)})
		lostErr = nil
		if !dialFailed && replayable(req) && connectionLost(err) {
			lostErr = err
		}
		if (!dialFailed && lostErr == nil) || attempt >= attempts || !resendable(req) || req.Context().Err() != nil {
			closeBody(req)
			return nil, err
		}
		avoid = append(avoid, picked.SubConn)
	}
}

// withTimeout returns out bounded by the pick's timeout (the route's, from
// a routing policy; 0 is none) on the channel's clock, and the function
// that releases the bound, to call when the request ends.
func (t *Transport) withTimeout(out *http.Request, timeout time.Duration) (*http.Request, context.CancelFunc) {
	if timeout <= 0 {
		return out, func() {}
	}
	ctx, cancel := t.Channel.Clock().WithTimeout(out.Context(), timeout)
	return out.WithContext(ctx), cancel
}

// maxRepicks bounds how many picks of a backend already found unreachable
// a retry gives back before it takes what it gets.
const maxRepicks = 8

// maxLostRepicks bounds the picks of a backend a retry after a lost
// connection gives back; it then fails rather than send the request to a
// backend that lost it.
const maxLostRepicks = 3

// pick picks a backend for req, giving back (as never sent) up to repicks
// picks of the backends in avoid, which this request could not reach or
// lost: the channel may not have taken them out of its picker yet.
func (t *Transport) pick(req *http.Request, avoid []*conn.SubConn, repicks int) (conn.PickResult, error) {
	opts := conn.PickOptions{WaitForReady: t.WaitForReady, Method: req.URL.Path, Metadata: req.Header,
		Authority: authority(req), HTTPMethod: method(req)}
	if t.RequestHash != nil {
		opts.Hash, opts.HasHash = t.RequestHash(req)
	}
	for i := 0; ; i++ {
		picked, err := t.Channel.Pick(req.Context(), opts)
		if err != nil || i == repicks || !slices.Contains(avoid, picked.SubConn) {
			return picked, err
		}
		picked.Finish(lb.DoneInfo{Err: errRepick})
	}
}

// authority returns req's authority: its Host, else its URL's host.
func authority(req *http.Request) string {
	if req.Host != "" {
		return req.Host
	}
	return req.URL.Host
}

// method returns req's method; "" is GET, as net/http sends it.
func method(req *http.Request) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return req.Method
}

// errRepick is the outcome of a pick given back unused.
var errRepick = fmt.Errorf("nethttp: picked a backend the request could not reach; picking again: %w", lb.ErrRequestNotSent)

// outgoing returns the request to send to addr on the given attempt: req
// with addr in its context, and, after the first attempt, a fresh body.
func outgoing(req *http.Request, addr resolver.Address, attempt int) (*http.Request, error) {
	out := req.WithContext(context.WithValue(req.Context(), backendKey{}, addr))
	if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("nethttp: %s %s: rewinding the body to try another backend: %w", req.Method, req.URL.Redacted(), err)
		}
		out.Body = body
	}
	return out, nil
}

// replayable reports whether req may be sent again after it may have
// reached a server, by net/http's rule for its own retries: an idempotent
// method, or an idempotency key. Its body must be resendable too.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// connectionLost reports whether err is a connection that ended before
// any response: the server closed it (EOF) or reset it. A timeout is not:
// the server may still be working on the request.
func connectionLost(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE)
}

// resendable reports whether req's body can be sent again.
func resendable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func (t *Transport) classify(resp *http.Response, err error) error {
	if t.Classify != nil {
		return t.Classify(resp, err)
	}
	return DefaultClassifier(resp, err)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// isDialError reports whether err means the backend could not be reached.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// withDone returns body calling done once, when it hits EOF, fails, or
// is closed. The body of a 101 Switching Protocols response, a
// connection to write to as well (io.ReadWriteCloser), stays one.
func withDone(body io.ReadCloser, done func(error)) io.ReadCloser {
	d := &doneBody{ReadCloser: body, done: done}
	if w, ok := body.(io.Writer); ok {
		return &doneReadWriteBody{doneBody: d, w: w}
	}
	return d
}

// doneReadWriteBody is a doneBody that can be written to.
type doneReadWriteBody struct {
	*doneBody
	w io.Writer
}

func (b *doneReadWriteBody) Write(p []byte) (int, error) { return b.w.Write(p) }

// doneBody calls done once, when the body hits EOF, fails, or is closed.
type doneBody struct {
	io.ReadCloser
	once sync.Once
	done func(error)
}

func (b *doneBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.once.Do(func() { b.done(nil) })
	case err != nil:
		b.once.Do(func() { b.done(err) })
	}
	return n, err
}

func (b *doneBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.done(nil) })
	return err
}

var _ http.RoundTripper = (*Transport)(nil)
