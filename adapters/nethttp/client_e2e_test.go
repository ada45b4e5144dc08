package nethttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/backoff"
)

// liveServer is an HTTP server answering with its name that counts its
// open connections, and can be stopped and started again on its address.
type liveServer struct {
	name string
	addr string
	s    *httptest.Server
	open atomic.Int64
	// closed gets a value after each connection closes, at most one pending.
	closed chan struct{}
}

func startLiveServer(t *testing.T, name string) *liveServer {
	t.Helper()
	l := &liveServer{name: name, closed: make(chan struct{}, 1)}
	l.start(t, "127.0.0.1:0")
	l.addr = l.s.Listener.Addr().String()
	t.Cleanup(l.stop)
	return l
}

// start serves on addr.
func (l *liveServer) start(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, l.name)
	}))
	s.Listener.Close()
	s.Listener = ln
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			l.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			l.open.Add(-1)
			select {
			case l.closed <- struct{}{}:
			default:
			}
		}
	}
	s.Start()
	l.s = s
}

// stop closes the server and its connections.
func (l *liveServer) stop() { l.s.Close() }

// waitNoConns waits until every connection to l is closed.
func (l *liveServer) waitNoConns(t *testing.T) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for l.open.Load() != 0 {
		select {
		case <-l.closed:
		case <-deadline:
			t.Fatalf("%s: %d connections still open 10 s after the client closed", l.name, l.open.Load())
		}
	}
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// put sends a PUT to url with a body that can be sent again (GetBody is
// set) and an Idempotency-Key, and returns the answer's body. Both make
// net/http send it again on a new connection when a pooled one it was
// written to is closed by the server (Request.isReplayable); lbkit's
// Transport sends it to another backend when its connection could not be
// made.
func put(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, strings.NewReader("payload"))
	if err != nil {
		return "", err
	}
	req.Header.Set("Idempotency-Key", "1")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// fastBackoff reconnects within tens of milliseconds, so the restarted
// server is back in the rotation quickly.
var fastBackoff = conn.WithBackoff(backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 100 * time.Millisecond})

// TestClientManyServicesOneRestarting sends requests to three hosts
// through one Client: alpha and beta, routed by WithRoute to a static
// target each, and gamma, routed by WithRouteFunc to two servers, one of
// which stops and starts again on its address mid-test. Every request
// succeeds (its body can be sent again, so one that could not reach the
// stopped server goes to the other, and one written to a pooled
// connection the server closed is sent again by net/http), the restarted
// server serves again, and after Close no connection, file descriptor or
// goroutine of the client is left.
//
// The server stops between two requests of each worker, as a server that
// drains before it restarts does: a request already written when its
// server dies may have been served, and is the caller's to retry
// (docs/choices.md, "Trying another backend"), so it would fail the test
// by design, not by fault.
func TestClientManyServicesOneRestarting(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts file descriptors in /proc/self/fd")
	}
	leaks := goleak.IgnoreCurrent()
	alpha, beta := startLiveServer(t, "alpha"), startLiveServer(t, "beta")
	gamma1, gamma2 := startLiveServer(t, "gamma1"), startLiveServer(t, "gamma2")
	servers := []*liveServer{alpha, beta, gamma1, gamma2}
	baseFDs := openFDs(t)

	client, err := nethttp.NewClient(
		nethttp.WithRoute("http://alpha", nethttp.Route{Target: "static:///" + alpha.addr}),
		nethttp.WithRoute("http://beta", nethttp.Route{Target: "static:///" + beta.addr}),
		nethttp.WithRouteFunc(func(scheme, host string) (nethttp.Route, error) {
			if host != "gamma" {
				return nethttp.Route{}, errors.New("unknown host")
			}
			return nethttp.Route{
				Target:  "static:///" + gamma1.addr + "," + gamma2.addr,
				Options: []conn.Option{fastBackoff},
			}, nil
		}),
		nethttp.WithTransport(&nethttp.Transport{WaitForReady: true}),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := client.WaitReady(ctx, "http://alpha", "http://beta", "http://gamma"); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}

	// Workers send to every host until told to stop.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent atomic.Int64
	var between sync.RWMutex // held for reading by each request
	failures := make(chan error, 100)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hosts := []string{"alpha", "beta", "gamma"}
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				h := hosts[i%3]
				between.RLock()
				got, err := put(ctx, client.Client, "http://"+h+"/x")
				between.RUnlock()
				if err == nil && !strings.HasPrefix(got, h) {
					err = errors.New("http://" + h + " answered " + got)
				}
				if err != nil {
					select {
					case failures <- err:
					default:
					}
				}
				sent.Add(1)
			}
		}()
	}
	servedByName := func(name string) {
		t.Helper()
		for range 1000 {
			if got, err := put(ctx, client.Client, "http://gamma/"); err == nil && got == name {
				return
			}
		}
		t.Fatalf("1000 requests to gamma and none served by %s", name)
	}
	servedByName("gamma1")
	between.Lock()
	gamma1.stop()
	between.Unlock()
	for before := sent.Load(); sent.Load() < before+100; {
		servedByName("gamma2") // traffic flows while gamma1 is down
	}
	gamma1.start(t, gamma1.addr)
	servedByName("gamma1") // back in the rotation
	close(stop)
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Errorf("a request failed: %v", err)
	}
	t.Logf("%d requests", sent.Load())

	if err := client.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := client.Get("http://alpha/"); !errors.Is(err, nethttp.ErrClientClosed) {
		t.Errorf("a request after Close: got %v, want ErrClientClosed", err)
	}
	for _, s := range servers {
		s.waitNoConns(t)
	}
	// A server closes its side of a connection after the client closed
	// its own, and may accept one the client dialled and closed after
	// waitNoConns saw none: allow it a moment. Fewer than before is an
	// earlier test's connection that finished closing meanwhile.
	n := openFDs(t)
	for deadline := time.Now().Add(5 * time.Second); n > baseFDs && time.Now().Before(deadline); n = openFDs(t) {
		time.Sleep(time.Millisecond)
	}
	if n > baseFDs {
		t.Errorf("%d file descriptors open after Close, %d before the client", n, baseFDs)
	}
	for _, s := range servers {
		s.stop()
	}
	goleak.VerifyNone(t, leaks)
}
