package nethttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
)

// newTestClient returns a client that routes every host to the server of
// the same name in servers, and closes it at the test's end.
func newTestClient(t *testing.T, servers map[string]*liveServer, opts ...nethttp.ClientOption) *nethttp.Client {
	t.Helper()
	route := nethttp.WithRouteFunc(func(_, host string) (nethttp.Route, error) {
		s, ok := servers[host]
		if !ok {
			return nethttp.Route{}, errors.New("no such test server")
		}
		return nethttp.Route{Target: "static:///" + s.addr}, nil
	})
	c, err := nethttp.NewClient(append([]nethttp.ClientOption{route}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clientGet sends a GET to url and returns the response, body unread.
func clientGet(t *testing.T, c *nethttp.Client, url string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp
}

// getAll sends a GET to url and reads the answer to the end.
func getAll(t *testing.T, c *nethttp.Client, url string) string {
	t.Helper()
	resp := clientGet(t, c, url)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return string(b)
}

// idleHarness is a client on a mock clock with the idle timeout idle.
type idleHarness struct {
	t      *testing.T
	clock  *clock.Mock
	client *nethttp.Client
	server *liveServer
}

const idle = time.Minute

func newIdleHarness(t *testing.T) *idleHarness {
	h := &idleHarness{t: t, clock: clock.NewMock(), server: startLiveServer(t, "a")}
	h.client = newTestClient(t, map[string]*liveServer{"a": h.server},
		nethttp.WithClock(h.clock), nethttp.WithIdleTimeout(idle))
	return h
}

// advance moves the clock by d and waits for the idle timers due.
func (h *idleHarness) advance(d time.Duration) {
	h.t.Helper()
	h.clock.Add(d)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.client.Settle(ctx); err != nil {
		h.t.Fatalf("Settle: %v", err)
	}
}

// channel returns the host's channel, failing if it has none.
func (h *idleHarness) channel(why string) interface{ State() lb.ConnectivityState } {
	h.t.Helper()
	ch, ok := h.client.Channel("http://a")
	if !ok {
		h.t.Fatalf("%s: the host has no channel", why)
	}
	return ch
}

// closedNow checks that the host's channel ch is closed, with its pool.
func (h *idleHarness) closedNow(ch interface{ State() lb.ConnectivityState }, why string) {
	h.t.Helper()
	if _, ok := h.client.Channel("http://a"); ok {
		h.t.Fatalf("%s: the host still has a channel", why)
	}
	if s := ch.State(); s != lb.Shutdown {
		h.t.Fatalf("%s: the old channel is %v, want SHUTDOWN", why, s)
	}
	h.server.waitNoConns(h.t)
}

// TestClientClosesIdleHostsOnTime checks the idle timeout exactly: a
// host's channel is open one nanosecond before the timeout after its last
// request ended, and closed (its pooled connection too) at it; the next
// request makes a new channel.
func TestClientClosesIdleHostsOnTime(t *testing.T) {
	h := newIdleHarness(t)
	getAll(t, h.client, "http://a/")
	ch := h.channel("after a request")
	h.advance(idle - time.Nanosecond)
	h.channel("1 ns before the timeout")
	h.advance(time.Nanosecond)
	h.closedNow(ch, "at the timeout")

	getAll(t, h.client, "http://a/")
	if h.channel("a request after the close") == ch {
		t.Fatal("the closed channel was used again")
	}
}

// TestClientIdleTimeoutCountsFromTheLastRequest checks that a request in
// the idle period moves the deadline to the timeout after its end.
func TestClientIdleTimeoutCountsFromTheLastRequest(t *testing.T) {
	h := newIdleHarness(t)
	getAll(t, h.client, "http://a/")
	ch := h.channel("after a request")
	h.advance(idle / 2)
	getAll(t, h.client, "http://a/")
	h.advance(idle / 2) // the first deadline: the check waits again
	h.channel("at the first request's deadline")
	h.advance(idle/2 - time.Nanosecond)
	h.channel("1 ns before the second request's deadline")
	h.advance(time.Nanosecond)
	h.closedNow(ch, "at the second request's deadline")
}

// TestClientNeverClosesAHostInUse checks that a request whose body is
// still open keeps its host's channel, however long, and that the timeout
// counts from when the body is closed.
func TestClientNeverClosesAHostInUse(t *testing.T) {
	h := newIdleHarness(t)
	getAll(t, h.client, "http://a/") // arms the idle check
	resp := clientGet(t, h.client, "http://a/")
	ch := h.channel("a request in flight")
	h.advance(3 * idle)
	h.channel("a request in flight for three timeouts")
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("reading the body after three timeouts: %v", err)
	}
	resp.Body.Close()
	h.advance(idle - time.Nanosecond)
	h.channel("1 ns before the timeout after the body's close")
	h.advance(time.Nanosecond)
	h.closedNow(ch, "at the timeout after the body's close")
}

// TestClientMakesOneChannelPerHost sends the first requests to a host
// from many goroutines at once: the route is asked once, every request
// succeeds, and they share one channel.
func TestClientMakesOneChannelPerHost(t *testing.T) {
	servers := map[string]*liveServer{"a": startLiveServer(t, "a"), "b": startLiveServer(t, "b")}
	var asked sync.Map // host → *atomic.Int64
	client, err := nethttp.NewClient(nethttp.WithRouteFunc(func(_, host string) (nethttp.Route, error) {
		n, _ := asked.LoadOrStore(host, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		return nethttp.Route{Target: "static:///" + servers[host].addr}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			host := []string{"a", "b"}[i%2]
			got, err := put(context.Background(), client.Client, "http://"+host+"/")
			if err == nil && got != host {
				err = errors.New(host + " answered " + got)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, host := range []string{"a", "b"} {
		n, _ := asked.Load(host)
		if got := n.(*atomic.Int64).Load(); got != 1 {
			t.Errorf("the route of %s was asked %d times, want 1", host, got)
		}
	}
}

// TestClientRoutingErrorsNameTheHost checks the errors of hosts that
// cannot be routed: each names the host and the reason, and a failed
// route is asked again at the next request.
func TestClientRoutingErrorsNameTheHost(t *testing.T) {
	var asked atomic.Int64
	client, err := nethttp.NewClient(
		nethttp.WithRoute("http://badtarget", nethttp.Route{Target: "nosuchscheme:///x"}),
		nethttp.WithRoute("http://badtemplate", nethttp.Route{Target: "static:///127.0.0.1:1",
			Transport: &nethttp.Transport{Channel: mustChannel(t)}}),
		nethttp.WithRouteFunc(func(scheme, host string) (nethttp.Route, error) {
			asked.Add(1)
			if host == "unmapped" {
				return nethttp.Route{}, errors.New("not in the service registry")
			}
			return nethttp.DefaultRoute(scheme, host)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, tc := range []struct{ url, want string }{
		{"http://unmapped/x", `nethttp: host http://unmapped: no route: not in the service registry`},
		{"http://badtarget/x", `nethttp: host http://badtarget: target "nosuchscheme:///x": `},
		{"http://badtemplate/x", `nethttp: host http://badtemplate: the route's Transport: the template's Channel must be nil`},
		{"ftp://files/x", `nethttp: host ftp://files: no route: no default port for scheme "ftp"`},
	} {
		_, err := client.Get(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("GET %s: got %v, want an error containing %q", tc.url, err, tc.want)
		}
	}
	before := asked.Load()
	_, _ = client.Get("http://unmapped/x")
	if asked.Load() != before+1 {
		t.Error("a route that failed was not asked again at the next request")
	}
	req := &http.Request{Method: http.MethodGet, URL: mustParse(t, "/relative"), Header: http.Header{}}
	if _, err := client.Transport.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "no host to route by") {
		t.Errorf("a URL without a host: got %v", err)
	}
}

// TestNewClientRejectsBadOptions checks that each invalid option is
// NewClient's error, named.
func TestNewClientRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  nethttp.ClientOption
		want string
	}{
		{nethttp.WithRoute("users", nethttp.Route{Target: "dns:///users:80"}), `WithRoute("users"): want "scheme://host[:port]"`},
		{nethttp.WithRoute("http://users/path", nethttp.Route{Target: "dns:///users:80"}), `WithRoute("http://users/path"): want`},
		{nethttp.WithRoute("http://users", nethttp.Route{}), `WithRoute("http://users"): Route.Target is empty`},
		{nethttp.WithRouteFunc(nil), "WithRouteFunc(nil)"},
		{nethttp.WithIdleTimeout(-time.Second), "WithIdleTimeout: must be >= 0, got -1s"},
		{nethttp.WithTransport(&nethttp.Transport{Channel: mustChannel(t)}), "WithTransport: the template's Channel must be nil"},
		{nil, "option 0 is nil"},
	} {
		_, err := nethttp.NewClient(tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}

// TestClientWaitReady checks that WaitReady returns nil once every host
// named can serve, and otherwise, when its context ends, an error naming
// each host that cannot and why, and no other.
func TestClientWaitReady(t *testing.T) {
	up := startLiveServer(t, "up")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := &liveServer{name: "down", addr: ln.Addr().String()}
	ln.Close() // nothing listens there
	client := newTestClient(t, map[string]*liveServer{"up": up, "down": down})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.WaitReady(ctx, "http://up"); err != nil {
		t.Fatalf("WaitReady(up): %v", err)
	}
	if _, ok := client.Channel("http://up"); !ok {
		t.Fatal("WaitReady made no channel")
	}

	// With an ended context WaitReady waits for nothing: it reports what
	// each channel can do now. Let down's channel fail first.
	ended, end := context.WithCancel(context.Background())
	end()
	_ = client.WaitReady(ended, "http://down")
	ch, ok := client.Channel("http://down")
	if !ok {
		t.Fatal("WaitReady made no channel for down")
	}
	for s := ch.State(); s != lb.TransientFailure; s = ch.State() {
		if !ch.WaitForStateChange(ctx, s) {
			t.Fatalf("down's channel is %v after 10 s, want TRANSIENT_FAILURE", s)
		}
	}
	err = client.WaitReady(ended, "http://up", "http://down", "http://unknown", "down")
	if err == nil {
		t.Fatal("WaitReady with a host that cannot serve returned nil")
	}
	msg := err.Error()
	for _, want := range []string{
		"nethttp: host http://down cannot serve: conn: pick: context canceled while waiting for a connection; last pick error: ",
		"connection refused",
		"nethttp: host http://unknown: no route: no such test server",
		`nethttp: WaitReady: host "down": want "scheme://host[:port]"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("WaitReady's error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "http://up") {
		t.Errorf("WaitReady's error %q names a host that can serve", msg)
	}
}

// TestClientCloseRacingRequests closes the client while goroutines send
// requests to several hosts: every request ends (none hangs), those
// after Close fail with ErrClientClosed, and goleak (TestMain) finds no
// goroutine left.
func TestClientCloseRacingRequests(t *testing.T) {
	servers := map[string]*liveServer{}
	for _, n := range []string{"a", "b", "c"} {
		servers[n] = startLiveServer(t, n)
	}
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "endless")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer stream.Close()
	servers["stream"] = &liveServer{addr: stream.Listener.Addr().String()}
	client := newTestClient(t, servers)
	var wg sync.WaitGroup
	var afterClose atomic.Int64
	closed := make(chan struct{})
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-closed:
					_, err := client.Get("http://a/")
					if !errors.Is(err, nethttp.ErrClientClosed) {
						t.Errorf("a request after Close: got %v, want ErrClientClosed", err)
					}
					afterClose.Add(1)
					return
				default:
				}
				host := []string{"a", "b", "c"}[(i+j)%3]
				if resp, err := client.Get("http://" + host + "/"); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	getAll(t, client, "http://a/")
	resp := clientGet(t, client, "http://stream/") // a body that never ends
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		read <- err
	}()
	if err := client.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, ok := client.Channel("http://a"); ok {
		t.Error("Channel returned a channel after Close")
	}
	select {
	case err := <-read:
		if err == nil {
			t.Error("a body being read when Close ran ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a body being read when Close ran is still being read 10 s later")
	}
	close(closed)
	wg.Wait()
	if afterClose.Load() != 12 {
		t.Errorf("%d goroutines sent after Close, want 12", afterClose.Load())
	}
	for _, n := range []string{"a", "b", "c"} {
		servers[n].waitNoConns(t)
	}
}

// mustChannel returns a channel closed at the test's end.
func mustChannel(t *testing.T) *conn.Channel {
	t.Helper()
	ch, err := conn.New("static:///127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	return ch
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestClientIdleCloseRacingRequests races idle closes with requests:
// each round begins with the host closed as idle, then sends requests
// from several goroutines while the clock moves past the idle timeout
// again, so the host is made, used and closed under them. Every request
// succeeds (none is cut off by an idle close, none uses a closed channel),
// and each round makes a channel.
func TestClientIdleCloseRacingRequests(t *testing.T) {
	mock := clock.NewMock()
	server := startLiveServer(t, "a")
	var made atomic.Int64
	client := newTestClient(t, nil, nethttp.WithClock(mock), nethttp.WithIdleTimeout(time.Millisecond),
		nethttp.WithRouteFunc(func(_, _ string) (nethttp.Route, error) {
			made.Add(1)
			return nethttp.Route{Target: "static:///" + server.addr}, nil
		}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	advance := func() {
		mock.Add(time.Millisecond)
		if err := client.Settle(ctx); err != nil {
			t.Fatalf("Settle: %v", err)
		}
	}
	const rounds = 20
	for round := range rounds {
		advance() // nothing in flight: the host closes
		if _, ok := client.Channel("http://a"); ok {
			t.Fatalf("round %d: the host is open after an idle timeout with no request", round)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					if got, err := put(ctx, client.Client, "http://a/"); err != nil || got != "a" {
						t.Errorf("round %d: got %q, %v", round, got, err)
					}
				}
			}()
		}
		for range 3 {
			advance()
		}
		wg.Wait()
	}
	if made.Load() < rounds {
		t.Errorf("%d channels made in %d rounds, each beginning with the host closed", made.Load(), rounds)
	}
}

// TestClientRoutePanicFailsTheWaiters checks that a route function that
// panics fails the requests waiting for the host's channel instead of
// leaving them waiting, and is asked again at the next request.
func TestClientRoutePanicFailsTheWaiters(t *testing.T) {
	server := startLiveServer(t, "a")
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	client := newTestClient(t, nil, nethttp.WithRouteFunc(func(_, _ string) (nethttp.Route, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
			panic("registry unavailable")
		}
		return nethttp.Route{Target: "static:///" + server.addr}, nil
	}))
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_, _ = client.Get("http://a/")
	}()
	<-entered
	waiter := make(chan error, 1)
	go func() {
		// Waits for the first request's channel, or, if it comes after
		// the panic, makes the channel anew.
		resp, err := client.Get("http://a/")
		if err == nil {
			resp.Body.Close()
		}
		waiter <- err
	}()
	close(release)
	if p := <-panicked; p != "registry unavailable" {
		t.Fatalf("the first request's panic: got %v", p)
	}
	select {
	case err := <-waiter:
		if err != nil && !strings.Contains(err.Error(), "nethttp: host http://a: the route function panicked") {
			t.Errorf("the waiting request: got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request waiting for a host whose route panicked still waits 10 s later")
	}
	if got := getAll(t, client, "http://a/"); got != "a" {
		t.Errorf("the next request: got %q", got)
	}
}

// TestDefaultRoute checks the default route's targets.
func TestDefaultRoute(t *testing.T) {
	for _, tc := range []struct{ scheme, host, want, err string }{
		{"http", "users", "dns:///users:80", ""},
		{"https", "users", "dns:///users:443", ""},
		{"http", "users:8080", "dns:///users:8080", ""},
		{"https", "[::1]", "dns:///[::1]:443", ""},
		{"http", "[::1]:81", "dns:///[::1]:81", ""},
		{"ftp", "files", "", `no default port for scheme "ftp"`},
	} {
		r, err := nethttp.DefaultRoute(tc.scheme, tc.host)
		if r.Target != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("DefaultRoute(%q, %q) = %q, %v; want %q, %q", tc.scheme, tc.host, r.Target, err, tc.want, tc.err)
		}
	}
}

// TestClientPerHostSettings checks the order of the settings: the
// client's round_robin, then WithChannelOptions and WithTransport for
// every host, then the host's Route, whose options and Transport template
// win.
func TestClientPerHostSettings(t *testing.T) {
	one, two := startLiveServer(t, "one"), startLiveServer(t, "two")
	target := "static:///" + one.addr + "," + two.addr
	pickFirst := conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"pick_first":{}}]}`)
	roundRobin := conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`)
	client, err := nethttp.NewClient(
		nethttp.WithRoute("http://default", nethttp.Route{Target: target}),
		nethttp.WithRoute("http://route", nethttp.Route{Target: target, Options: []conn.Option{roundRobin},
			Transport: &nethttp.Transport{WaitForReady: true, Base: &http.Transport{DisableKeepAlives: true}}}),
		nethttp.WithChannelOptions(pickFirst),
		nethttp.WithTransport(&nethttp.Transport{WaitForReady: true}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.WaitReady(ctx, "http://default", "http://route"); err != nil {
		t.Fatal(err)
	}
	seen := func(host string, n int) map[string]bool {
		got := map[string]bool{}
		for range n {
			got[getAll(t, client, "http://"+host+"/")] = true
			if len(got) == 2 {
				break
			}
		}
		return got
	}
	if got := seen("default", 20); len(got) != 1 || !got["one"] {
		t.Errorf("WithChannelOptions' pick_first: served by %v, want one only", got)
	}
	if got := seen("route", 200); len(got) != 2 {
		t.Errorf("the route's round_robin: served by %v, want both", got)
	}
	// Only the route's host reaches two, and its template keeps no
	// connection open: had the template been ignored, one would stay.
	two.waitNoConns(t)
}
