package nethttp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
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
