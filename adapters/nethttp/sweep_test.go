package nethttp_test

import (
	"context"
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
	b := &countingBackend{changed: make(chan struct{}, 1)}
	b.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
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
	b.Start()
	t.Cleanup(b.Close)
	return b
}

// servedBy sends requests through c until one reaches want's address.
func servedBy(t *testing.T, c *http.Client, want string) {
	t.Helper()
	for range 100 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc/", nil)
		resp, err := c.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("GET: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // read to the end: the connection is reused
		_ = resp.Body.Close()
		cancel()
		if a, _ := nethttp.BackendOf(resp); a.Addr == want {
			return
		}
	}
	t.Fatalf("100 requests and none reached %s", want)
}

// waitClosed waits until b has seen one of its connections closed.
func waitClosed(t *testing.T, b *countingBackend, why string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for b.closed.Load() == 0 {
		select {
		case <-b.changed:
		case <-deadline:
			t.Fatalf("%s: the connection to %s is still open after 10 s", why, hostOf(b.Server))
		}
	}
}

// TestBackendsThatLeaveAreDropped checks that the pool of a backend the
// channel no longer has is dropped and its idle connection closed: when a
// new backend arrives, and, with no new backend, after enough requests.
func TestBackendsThatLeaveAreDropped(t *testing.T) {
	a, b, c := newCountingBackend(t), newCountingBackend(t), newCountingBackend(t)
	addrs := func(bs ...*countingBackend) resolver.State {
		var s resolver.State
		for _, x := range bs {
			s.Addresses = append(s.Addresses, resolver.Address{Addr: hostOf(x.Server)})
		}
		return s
	}
	r := manual.NewBuilder("sweep", manual.WithInitialState(addrs(a, b)))
	ch, err := conn.New("sweep:///svc", conn.WithResolver(r),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	servedBy(t, client, hostOf(a.Server))
	servedBy(t, client, hostOf(b.Server))

	// a leaves and c arrives: the first request to c drops a's pool.
	if err := r.UpdateState(addrs(b, c)); err != nil {
		t.Fatal(err)
	}
	settle(t, ch)
	servedBy(t, client, hostOf(c.Server))
	waitClosed(t, a, "a left and c arrived")

	// b leaves, nothing arrives: a sweep after enough requests drops it.
	if err := r.UpdateState(addrs(c)); err != nil {
		t.Fatal(err)
	}
	settle(t, ch)
	for range 1024 {
		servedBy(t, client, hostOf(c.Server))
	}
	waitClosed(t, b, "b left, then 1024 requests")
	if n := c.closed.Load(); n != 0 {
		t.Fatalf("%d connections to c were closed while c is still a backend", n)
	}
}

func settle(t *testing.T, ch *conn.Channel) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ch.Settle(ctx); err != nil {
		t.Fatal(err)
	}
}
