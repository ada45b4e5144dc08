// Package httpbackend is a real HTTP server on a loopback port, for tests
// of HTTP traffic balanced by lbkit (a channel with adapters/nethttp):
// lbkit's own tests and demos, and users' own. It answers every request
// with its name (as the body, and in the X-Backend header), answers 503
// while told to fail (except on /healthz, as a backend whose dependency
// fails while it lives), answers late while told to be slow (except on
// /healthz), accepts requests but never answers them while told to hang,
// and can be stopped and started again on the same port, as a crashed and
// restarted server would be. [CountBodies] counts which backends answered
// a series of requests.
//
// Its delays are real time: a test that must not wait uses SetDelay for
// requests it cancels, not to time anything.
package httpbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Backend is one server. Its methods are safe for concurrent use.
type Backend struct {
	name    string
	addr    string
	failing atomic.Bool
	delay   atomic.Int64                  // how long to wait before answering, in nanoseconds
	hang    atomic.Pointer[chan struct{}] // set while hanging; closed when it stops

	mu  sync.Mutex
	srv *http.Server
	wg  sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and serves.
func Start(name string) (*Backend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	b := &Backend{name: name, addr: ln.Addr().String()}
	b.serve(ln)
	return b, nil
}

// New is [Start] for a test: it fails tb when the backend cannot start,
// and stops the backend when the test ends (tb.Cleanup).
func New(tb testing.TB, name string) *Backend {
	tb.Helper()
	b, err := Start(name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Stop)
	return b
}

// Name returns the backend's name.
func (b *Backend) Name() string { return b.name }

// Addr returns the backend's host:port.
func (b *Backend) Addr() string { return b.addr }

// Port returns the backend's port.
func (b *Backend) Port() string {
	_, port, _ := net.SplitHostPort(b.addr)
	return port
}

// SetFailing makes the backend answer 503 (true) or 200 (false) to every
// path but /healthz.
func (b *Backend) SetFailing(failing bool) { b.failing.Store(failing) }

// SetDelay makes the backend wait d before it answers each request but
// /healthz, as a slow server would; 0 to answer at once.
func (b *Backend) SetDelay(d time.Duration) { b.delay.Store(int64(d)) }

// SetHanging makes the backend accept requests and hold them unanswered
// until it stops hanging or the request ends (true), or answer again
// (false), releasing the held requests.
func (b *Backend) SetHanging(hanging bool) {
	if hanging {
		release := make(chan struct{})
		if old := b.hang.Swap(&release); old != nil {
			close(*old)
		}
		return
	}
	if old := b.hang.Swap(nil); old != nil {
		close(*old)
	}
}

func (b *Backend) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if release := b.hang.Load(); release != nil {
			select {
			case <-*release:
			case <-r.Context().Done():
				return
			}
		}
		if d := time.Duration(b.delay.Load()); d > 0 && r.URL.Path != "/healthz" {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		w.Header().Set("X-Backend", b.name)
		if b.failing.Load() && r.URL.Path != "/healthz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, b.name)
	})}
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener closed under us: the backend is stopping
		}
	}()
}

// Stop closes the listener and every connection, as a crashed server
// would, and waits for the server to end. Stopping a stopped backend does
// nothing.
func (b *Backend) Stop() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
	b.wg.Wait()
}

// Restart listens on the same port again.
func (b *Backend) Restart() error {
	ln, err := net.Listen("tcp", b.addr)
	if err != nil {
		return fmt.Errorf("restarting backend %s on %s: %w", b.name, b.addr, err)
	}
	b.serve(ln)
	return nil
}

// TB is the part of testing.TB that [CountBodies] uses.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// CountBodies sends n GET requests for url through client, one after the
// other, reads each answer whole and counts the answers by body (a
// Backend's body is its name). Each request has 10 s to answer, a guard
// against hangs only. A request that fails fails tb. It is safe for
// concurrent use if client and tb are.
func CountBodies(tb TB, client *http.Client, url string, n int) map[string]int {
	tb.Helper()
	got := map[string]int{}
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			cancel()
			tb.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			tb.Fatal(fmt.Errorf("GET %s: %w", url, err))
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil {
			tb.Fatal(fmt.Errorf("GET %s: reading the body: %w", url, err))
		}
		got[string(body)]++
	}
	return got
}
