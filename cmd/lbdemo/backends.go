package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// backend is an HTTP server on 127.0.0.1 that answers with its name, with
// status 503 while failing is set. It can be stopped (listener and
// connections closed) and started again on the same port.
type backend struct {
	name    string
	addr    string
	failing atomic.Bool

	mu  sync.Mutex
	srv *http.Server
	wg  sync.WaitGroup
}

func startBackend(name string) (*backend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	b := &backend{name: name, addr: ln.Addr().String()}
	b.serve(ln)
	return b, nil
}

func (b *backend) port() string {
	_, port, _ := net.SplitHostPort(b.addr)
	return port
}

func (b *backend) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Backend", b.name)
		if b.failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, b.name)
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

// stop closes the listener and every connection, as a crashed server would.
func (b *backend) stop() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
	b.wg.Wait()
}

// restart listens on the same port again.
func (b *backend) restart() error {
	ln, err := net.Listen("tcp", b.addr)
	if err != nil {
		return fmt.Errorf("restarting backend %s on %s: %w", b.name, b.addr, err)
	}
	b.serve(ln)
	return nil
}
