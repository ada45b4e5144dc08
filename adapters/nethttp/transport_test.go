package nethttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	_ "github.com/lbkit/lbkit/lb/pickfirst"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend is an HTTP server that answers with its name and the Host header
// it saw.
func backend(t *testing.T, name string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", name, r.Host)
	}))
	t.Cleanup(s.Close)
	return s
}

// staticBuilder is a resolver publishing fixed addresses.
type staticBuilder struct{ addrs []string }

func (b staticBuilder) Scheme() string { return "fixed" }
func (b staticBuilder) Build(_ resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	var s resolver.State
	for _, a := range b.addrs {
		s.Addresses = append(s.Addresses, resolver.Address{Addr: a})
	}
	cc.UpdateState(s)
	return nopResolver{}, nil
}

type nopResolver struct{}

func (nopResolver) ResolveNow() {}
func (nopResolver) Close()      {}

// channelClient returns a channel for target with opts and an HTTP client
// over it whose requests wait for a READY backend; both are closed when
// the test ends (the client's idle connections first).
func channelClient(t *testing.T, target string, opts ...conn.Option) (*conn.Channel, *http.Client) {
	t.Helper()
	ch, err := conn.New(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	t.Cleanup(tr.CloseIdleConnections)
	return ch, &http.Client{Transport: tr}
}

func hostOf(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

func TestTransportSendsToPickedBackendKeepingHost(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	ch, err := conn.New("fixed:///svc", conn.WithResolver(staticBuilder{addrs: []string{hostOf(a), hostOf(b)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	if got := get(t, client, "http://api.example/x"); got != "a api.example" {
		t.Fatalf("response %q, want backend a with Host api.example", got)
	}
	a.Close()
	// pick_first moves to b once a's connection is gone.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/x", nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			if string(body) == "b api.example" {
				break
			}
		} else {
			cancel()
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests never reached backend b after a stopped (last error %v)", err)
		}
	}
}

// steadyDialer "connects" without touching the network, to a connection
// that is never lost: the SubConn stays READY whatever the backend does, so
// a request's failure can only come from the request itself.
type steadyDialer struct{}

func (steadyDialer) Dial(context.Context, resolver.Address) (conn.Conn, error) {
	return steadyConn{lost: make(chan struct{})}, nil
}

type steadyConn struct{ lost chan struct{} }

func (c steadyConn) Lost() <-chan struct{} { return c.lost }
func (steadyConn) Close() error            { return nil }

func TestTransportCallsDoneWithTheOutcome(t *testing.T) {
	outcomes := make(chan lb.DoneInfo, 10)
	a := backend(t, "a")
	ch, err := conn.New("fixed:///svc", conn.WithResolver(staticBuilder{addrs: []string{hostOf(a)}}),
		conn.WithRegistry(lb.NewRegistry(outcomeBuilder{name: "test_done_counter", outcomes: outcomes})),
		conn.WithDialer(steadyDialer{}),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"test_done_counter":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true, MaxAttempts: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get(t, client, "http://svc/")
	select {
	case done := <-outcomes:
		if done.Err != nil {
			t.Fatalf("Done(%v), want nil for a successful request", done.Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Done not called after the body was read")
	}
	a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc/", nil)
	_, reqErr := client.Do(req)
	if reqErr == nil {
		t.Fatal("request to a closed backend succeeded")
	}
	select {
	case done := <-outcomes:
		if done.Err == nil || !strings.Contains(reqErr.Error(), done.Err.Error()) {
			t.Fatalf("Done(%v) for the failed request %q, want its error", done.Err, reqErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Done not called for a failed request")
	}
}

func TestTransportFailsFastWithoutBackends(t *testing.T) {
	ch, err := conn.New("fixed:///svc", conn.WithResolver(staticBuilder{addrs: []string{"127.0.0.1:1"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	client := &http.Client{Transport: &nethttp.Transport{Channel: ch}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The first request may queue while the channel connects; once the
	// only address has failed the request fails fast.
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc/", nil)
		_, err := client.Do(req)
		if err == nil {
			t.Fatal("request to an unreachable backend succeeded")
		}
		if errors.Is(err, lb.ErrTransientFailure) || strings.Contains(err.Error(), "refused") {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no fail-fast error: %v", err)
		}
	}
}
