package nethttp_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
)

// A backend that accepts requests but never answers is drained by an HTTP
// health check and returns once it answers again; the other keeps serving.
// Real time, short intervals: the exact thresholds and deadlines are pinned
// on a mock clock in conn (TestHealthCheckThresholdsAndDeadlines).
func TestHTTPHealthCheckDrainsAHungBackend(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	ch, err := conn.New("static:///"+a.Addr()+","+b.Addr(),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
		conn.WithHealthCheck(conn.HealthCheck{
			Checker:  conn.HTTPHealthCheck{Path: "/healthz", Host: "svc"},
			Interval: 20 * time.Millisecond, Timeout: 50 * time.Millisecond,
			UnhealthyThreshold: 2, HealthyThreshold: 1, Jitter: -1,
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	// servedBy sends one request, bounded by a short deadline, and returns
	// the backend that answered, or "" on an error.
	servedBy := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc/", nil)
		resp, err := client.Do(req)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	// until sends requests until the last n all came from the backends in
	// want, and returns how long that took.
	until := func(what string, n int, want ...string) time.Duration {
		t.Helper()
		start, run := time.Now(), 0
		ok := map[string]bool{}
		for _, w := range want {
			ok[w] = true
		}
		seen := map[string]bool{}
		for ctx := guardCtx(t); run < n || len(seen) < len(want); {
			if ctx.Err() != nil {
				t.Fatalf("%s: never reached (last run %d, seen %v)", what, run, seen)
			}
			if got := servedBy(); ok[got] {
				run++
				seen[got] = true
			} else {
				run, seen = 0, map[string]bool{}
			}
		}
		return time.Since(start)
	}
	until("both backends serving", 10, "a", "b")
	b.SetHanging(true)
	drained := until("the hung backend drained", 20, "a")
	b.SetHanging(false)
	back := until("the backend back", 10, "a", "b")
	t.Logf("drained in %v (2 failed checks of 50 ms, 20 ms apart), back in %v", drained, back)
}

// guardCtx bounds a wait; it only turns a hang into a failure.
func guardCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
