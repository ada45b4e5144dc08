package nethttp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/lbtest/testpki"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
	_ "github.com/lbkit/lbkit/lb/roundrobin"
)

// countingBackend is an HTTP server that counts the connections it sees
// closed after they served a request (the channel's own reachability
// checks connect and close without one).
type countingBackend struct {
	*httptest.Server
	served  sync.Map // net.Conn → true, once it served a request
	closed  atomic.Int64
	changed chan struct{} // a value after each close, at most one pending
}

func newCountingBackend(t *testing.T) *countingBackend {
	return startCountingBackend(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}), nil)
}

// startCountingBackend starts a countingBackend serving h, over TLS with
// HTTP/2 when cert is not nil.
func startCountingBackend(t *testing.T, h http.Handler, cert *tls.Certificate) *countingBackend {
	b := &countingBackend{changed: make(chan struct{}, 1)}
	b.Server = httptest.NewUnstartedServer(h)
	b.Config.ConnState = func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateActive:
			b.served.Store(c, true)
		case http.StateClosed, http.StateHijacked:
			if _, served := b.served.LoadAndDelete(c); !served {
				return
			}
			b.closed.Add(1)
			select {
			case b.changed <- struct{}{}:
			default:
			}
		}
	}
	if cert != nil {
		b.EnableHTTP2 = true
		b.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		b.StartTLS()
	} else {
		b.Start()
	}
	t.Cleanup(b.Close)
	return b
}

// servedBy sends requests through c until one reaches want's address.
// Its requests have no context to cancel: net/http may close a connection
// whose request's context is canceled just after its body was read to the
// end, before the connection went back to the pool, which this file's
// tests would count as a pool closing it (c's Timeout is the hang guard).
func servedBy(t *testing.T, c *http.Client, want string) {
	t.Helper()
	for range 100 {
		req, _ := http.NewRequest(http.MethodGet, "http://svc/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // read to the end: the connection is reused
		_ = resp.Body.Close()
		if a, _ := nethttp.BackendOf(resp); a.Addr == want {
			return
		}
	}
	t.Fatalf("100 requests and none reached %s", want)
}

// sweepHangGuard bounds every wait of these tests. It only guards against
// a hang: with 1,024 requests under the race detector on a loaded 2-core
// machine, 10 s was once not enough for a healthy run.
const sweepHangGuard = time.Minute

// waitClosed waits until b has seen one of its connections closed.
func waitClosed(t *testing.T, b *countingBackend, why string) {
	t.Helper()
	deadline := time.After(sweepHangGuard)
	for b.closed.Load() == 0 {
		select {
		case <-b.changed:
		case <-deadline:
			t.Fatalf("%s: the connection to %s is still open after %v", why, hostOf(b.Server), sweepHangGuard)
		}
	}
}

// TestBackendsThatLeaveAreDropped checks that the pool of a backend the
// channel no longer has is dropped and its idle connection closed after
// enough requests, while the other backends keep their pools.
func TestBackendsThatLeaveAreDropped(t *testing.T) {
	a, b := newCountingBackend(t), newCountingBackend(t)
	r := manual.NewBuilder("sweep", manual.WithInitialState(addrsOf(a, b)))
	ch, err := conn.New("sweep:///svc", conn.WithResolver(r),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	// net/http hands a connection back to its pool after the response's
	// body is read, on a goroutine of its own: a request sent right after
	// may find the pool empty and dial a second connection, and a pool
	// over MaxIdleConnsPerHost (2 by default) closes the extra one. That
	// close is net/http's, not a sweep's: a pool that keeps every idle
	// connection leaves only the sweep to close them.
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 1 << 16
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true, Base: base}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: sweepHangGuard}
	servedBy(t, client, hostOf(a.Server))
	servedBy(t, client, hostOf(b.Server))

	// b's pool is checked, not b's connections: net/http closes a
	// connection itself when its writing goroutine has not reported the
	// request written within 50 ms of the response being read (its
	// persistConn.wroteRequest), which a loaded machine's scheduler causes
	// about once in a hundred runs; that close is no sweep's.
	poolB, _ := nethttp.PoolOf(tr, hostOf(b.Server))
	if err := r.UpdateState(addrsOf(b)); err != nil {
		t.Fatal(err)
	}
	settle(t, ch)
	for range 1024 {
		servedBy(t, client, hostOf(b.Server))
	}
	waitClosed(t, a, "a left, then 1024 requests")
	if pool, _ := nethttp.PoolOf(tr, hostOf(a.Server)); pool != nil {
		t.Fatal("a left, then 1024 requests: its pool is still held")
	}
	if pool, dropped := nethttp.PoolOf(tr, hostOf(b.Server)); pool != poolB || dropped {
		t.Fatalf("b's pool was replaced (%v) or dropped (%v) while b is still a backend", pool != poolB, dropped)
	}
}

// slowH2Case is an HTTP/2 backend over TLS whose handler signals entered
// and answers only after release, another backend, and a Transport over a
// round_robin channel whose manual resolver r holds the slow one first.
type slowH2Case struct {
	slow, other      *countingBackend
	entered, release chan struct{}
	r                *manual.Builder
	ch               *conn.Channel
	tr               *nethttp.Transport
}

// newSlowH2Case starts a slowH2Case; scheme names its resolver. The
// slow backend reads each request's body before it signals.
func newSlowH2Case(t *testing.T, scheme string) *slowH2Case {
	t.Helper()
	cert, roots := testpki.SelfSigned(t, testpki.Leaf{CommonName: "svc", Usage: x509.ExtKeyUsageServerAuth, DNSNames: []string{"svc"}})
	c := &slowH2Case{entered: make(chan struct{}), release: make(chan struct{})}
	c.slow = startCountingBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		close(c.entered)
		<-c.release
		_, _ = w.Write([]byte(r.Proto))
	}), &cert)
	c.other = newCountingBackend(t)
	c.r = manual.NewBuilder(scheme, manual.WithInitialState(addrsOf(c.slow)))
	ch, err := conn.New(scheme+":///svc", conn.WithResolver(c.r),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	c.ch = ch
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = &tls.Config{RootCAs: roots}
	base.ForceAttemptHTTP2 = true
	base.IdleConnTimeout = 0 // only the Transport may close the connection
	c.tr = &nethttp.Transport{Channel: ch, WaitForReady: true, Base: base}
	t.Cleanup(c.tr.CloseIdleConnections)
	return c
}

// TestPoolInUseIsKeptUntilItsLastResponse checks that a backend that
// leaves while an HTTP/2 request is in flight keeps its pool until the
// response body is closed, and that CloseIdleConnections then drops the
// pool and closes the connection (a dropped pool's connections could not
// be closed by anything).
func TestPoolInUseIsKeptUntilItsLastResponse(t *testing.T) {
	c := newSlowH2Case(t, "inflight")
	slow, other, entered, release, r, ch, tr := c.slow, c.other, c.entered, c.release, c.r, c.ch, c.tr

	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), sweepHangGuard)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://svc/", nil)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{string(body), err}
	}()
	select {
	case <-entered:
	case res := <-done:
		t.Fatalf("the request ended before reaching the handler: %q, %v", res.body, res.err)
	case <-time.After(sweepHangGuard):
		t.Fatal("the request did not reach the backend")
	}
	if err := r.UpdateState(addrsOf(other)); err != nil {
		t.Fatal(err)
	}
	settle(t, ch)
	tr.CloseIdleConnections() // the pool is in use: kept
	close(release)
	res := <-done
	if res.err != nil || res.body != "HTTP/2.0" {
		t.Fatalf("the request in flight: %q, %v; want an HTTP/2.0 answer", res.body, res.err)
	}
	if n := slow.closed.Load(); n != 0 {
		t.Fatalf("%d connections closed while the request was in flight", n)
	}
	tr.CloseIdleConnections() // no request left: dropped, its connection closed
	waitClosed(t, slow, "the backend left, its last response was closed, then CloseIdleConnections")
}

func addrsOf(bs ...*countingBackend) resolver.State {
	var s resolver.State
	for _, x := range bs {
		s.Addresses = append(s.Addresses, resolver.Address{Addr: x.Listener.Addr().String()})
	}
	return s
}

func settle(t *testing.T, ch *conn.Channel) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sweepHangGuard)
	defer cancel()
	if err := ch.Settle(ctx); err != nil {
		t.Fatal(err)
	}
}

// heldCloseBody is a one-byte request body whose Close waits for gate.
// The HTTP/2 client closes a sent request body before it forgets the
// stream, so this keeps the stream on its connection after the response
// body has returned io.EOF.
type heldCloseBody struct {
	read bool
	gate chan struct{}
}

func (b *heldCloseBody) Read(p []byte) (int, error) {
	if b.read {
		return 0, io.EOF
	}
	b.read = true
	p[0] = 'x'
	return 1, io.EOF
}

func (b *heldCloseBody) Close() error { <-b.gate; return nil }

// TestDroppedPoolClosesAStreamStillEnding checks that dropping a pool
// closes its HTTP/2 connection even while the connection still ends the
// stream of a response its caller has read to the end: idle-connection
// closing skips such a connection, and once the pool is out of the map
// nothing else could close it (found by review).
func TestDroppedPoolClosesAStreamStillEnding(t *testing.T) {
	c := newSlowH2Case(t, "ending")
	slow, other, entered, release, r, ch, tr := c.slow, c.other, c.entered, c.release, c.r, c.ch, c.tr

	gate := make(chan struct{})
	type result struct {
		resp *http.Response
		err  error
	}
	got := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), sweepHangGuard)
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://svc/", &heldCloseBody{gate: gate})
		req.ContentLength = 1
		resp, err := tr.RoundTrip(req)
		got <- result{resp, err}
	}()
	select {
	case <-entered:
	case <-time.After(sweepHangGuard):
		t.Fatal("the request did not reach the backend")
	}
	if err := r.UpdateState(addrsOf(other)); err != nil {
		t.Fatal(err)
	}
	settle(t, ch)
	close(release)
	res := <-got
	if res.err != nil {
		t.Fatal(res.err)
	}
	if body, err := io.ReadAll(res.resp.Body); err != nil || string(body) != "HTTP/2.0" {
		t.Fatalf("response %q, %v", body, err)
	}
	tr.CloseIdleConnections() // no user left: the pool is dropped while its stream still ends
	close(gate)
	_ = res.resp.Body.Close()
	waitClosed(t, slow, "the pool was dropped while its last stream was ending")
}

// TestUpgradeResponseBodyIsWritable checks that a 101 Switching
// Protocols response's body stays a connection the caller can write to
// (httputil.ReverseProxy upgrades need io.ReadWriteCloser), with a policy
// that counts requests in flight (a Done) and one that does not (found by
// review).
func TestUpgradeResponseBodyIsWritable(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		_, _ = rw.WriteString(line)
		_ = rw.Flush()
	}))
	defer echo.Close()
	for _, policy := range []string{"round_robin", "least_request_experimental"} {
		t.Run(policy, func(t *testing.T) {
			ch, err := conn.New("fixed:///svc", conn.WithResolver(staticBuilder{addrs: []string{hostOf(echo)}}),
				conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"`+policy+`":{}}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
			defer tr.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), sweepHangGuard)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc/", nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "echo")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			rwc, ok := resp.Body.(io.ReadWriteCloser)
			if resp.StatusCode != http.StatusSwitchingProtocols || !ok {
				t.Fatalf("status %d, body %T: want 101 and an io.ReadWriteCloser", resp.StatusCode, resp.Body)
			}
			if _, err := io.WriteString(rwc, "ping\n"); err != nil {
				t.Fatal(err)
			}
			line := make([]byte, 5)
			if _, err := io.ReadFull(rwc, line); err != nil || string(line) != "ping\n" {
				t.Fatalf("echo %q, %v", line, err)
			}
		})
	}
}
