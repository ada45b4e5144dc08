package nethttp_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
)

// onlyReader hides a reader's other methods, so net/http cannot rewind it
// (no GetBody).
type onlyReader struct{ io.Reader }

// A request whose backend cannot be reached was never sent: it is tried on
// another backend when its body can be sent again, and fails with the dial
// error otherwise.
func TestUnreachableBackendRequestTriesAnotherWhenSafe(t *testing.T) {
	dead, live := httpbackend.New(t, "dead"), httpbackend.New(t, "live")
	dead.Stop()
	// The steady dialer keeps both SubConns READY whatever the backends do,
	// so picks reach the dead one until a request finds it unreachable.
	for _, tc := range []struct {
		name   string
		body   func() io.Reader
		method string
		ok     bool
	}{
		{"GET", nil, http.MethodGet, true},
		{"POST with a rewindable body", func() io.Reader { return bytes.NewReader([]byte("x")) }, http.MethodPost, true},
		{"POST with a one-shot body", func() io.Reader { return onlyReader{strings.NewReader("x")} }, http.MethodPost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := conn.New("static:///"+dead.Addr()+","+live.Addr(), conn.WithDialer(steadyDialer{}),
				conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`), conn.WithRandSeed(1, 1))
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			// Both backends in the picker before the first request: a
			// request sent while only the dead one is would find no other
			// backend to try.
			waitPickerHas(t, ch, dead.Addr(), live.Addr())
			tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			// round_robin alternates: about half the requests are picked
			// for the dead backend first.
			failures := 0
			for range 6 {
				var body io.Reader
				if tc.body != nil {
					body = tc.body()
				}
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				req, _ := http.NewRequestWithContext(rctx, tc.method, "http://svc/", body)
				resp, err := client.Do(req)
				cancel()
				if err != nil {
					if tc.ok || !strings.Contains(err.Error(), "connection refused") {
						t.Fatalf("%s failed: %v", tc.name, err)
					}
					failures++
					continue
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if backend, _ := nethttp.BackendOf(resp); string(got) != "live" || backend.Addr != live.Addr() {
					t.Fatalf("served by %q at %v, want live", got, backend)
				}
			}
			if !tc.ok && failures == 0 {
				t.Fatalf("%s: no request failed, want the ones picked for the dead backend to fail with its dial error", tc.name)
			}
		})
	}
}

// waitPickerHas picks from ch, giving every pick back unused, until the
// picker has returned each of addrs: then the picker in use holds them all
// (a snapshot can show endpoints READY while the picker that has them is
// still being published).
func waitPickerHas(t *testing.T, ch *conn.Channel, addrs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := map[string]bool{}
	for len(seen) < len(addrs) {
		r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
		if err != nil {
			t.Fatalf("waiting for a picker with %v (seen %v): %v", addrs, seen, err)
		}
		if r.Done != nil {
			r.Done(lb.DoneInfo{Err: lb.ErrRequestNotSent})
		}
		if a := r.SubConn.Address().Addr; slices.Contains(addrs, a) {
			seen[a] = true
		}
	}
}

// hangUpBackend accepts connections, reads each request's headers and
// closes the connection without an answer: a server that stops under a
// request sent on a fresh connection.
func hangUpBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = http.ReadRequest(bufio.NewReader(c))
			}()
		}
	}()
	return ln.Addr().String()
}

// A request whose connection is lost before any response may have reached
// the server: it is tried on another backend when it is replayable (an
// idempotent method, or an idempotency key, with a body that can be sent
// again), and fails with the lost connection's error otherwise.
func TestLostConnectionRequestTriesAnotherWhenReplayable(t *testing.T) {
	hangUp, live := hangUpBackend(t), httpbackend.New(t, "live")
	for _, tc := range []struct {
		name   string
		method string
		body   func() io.Reader
		key    bool
		ok     bool
	}{
		{"GET", http.MethodGet, nil, false, true},
		{"DELETE", http.MethodDelete, nil, false, false}, // idempotent, but net/http does not replay it without a key
		{"POST with a rewindable body", http.MethodPost, func() io.Reader { return bytes.NewReader([]byte("x")) }, false, false},
		{"POST with a rewindable body and an Idempotency-Key", http.MethodPost, func() io.Reader { return bytes.NewReader([]byte("x")) }, true, true},
		{"POST with a one-shot body and an Idempotency-Key", http.MethodPost, func() io.Reader { return onlyReader{strings.NewReader("x")} }, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := conn.New("static:///"+hangUp+","+live.Addr(), conn.WithDialer(steadyDialer{}),
				conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`), conn.WithRandSeed(1, 1))
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			waitPickerHas(t, ch, hangUp, live.Addr())
			tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			failures := 0
			for range 6 { // round_robin alternates: about half start on hangUp
				var body io.Reader
				if tc.body != nil {
					body = tc.body()
				}
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				req, _ := http.NewRequestWithContext(rctx, tc.method, "http://svc/", body)
				if tc.key {
					req.Header.Set("Idempotency-Key", "k1")
				}
				resp, err := client.Do(req)
				cancel()
				if err != nil {
					if tc.ok {
						t.Fatalf("%s failed: %v", tc.name, err)
					}
					failures++
					continue
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(got) != "live" {
					t.Fatalf("served by %q, want live", got)
				}
			}
			if !tc.ok && failures == 0 {
				t.Fatalf("%s: no request failed, want the ones sent to the backend that hangs up to fail", tc.name)
			}
		})
	}
}
