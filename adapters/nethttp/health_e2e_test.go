package nethttp_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
)

// A backend that accepts requests but never answers is drained by an HTTP
// health check and returns once it answers again; the other keeps serving.
// Real time, short intervals: the exact thresholds and deadlines are pinned
// on a mock clock in conn (TestHealthCheckThresholdsAndDeadlines).
func TestHTTPHealthCheckDrainsAHungBackend(t *testing.T) {
	a, b := httpbackend.New(t, "a"), httpbackend.New(t, "b")
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

// A real HTTP backend killed and restarted on its address, behind a channel
// on a mock clock that checks health over HTTP every 5 s and backs off a
// minute after a failed dial: the restarted backend takes no request while
// the clock is one nanosecond short of the first probe, one interval after
// the failed dial, and takes requests once the clock reaches it, 55 s
// before the backoff would end. Real dials, checks and requests; only the
// clock is the test's (issue 27; the real clock's figures are
// internal/stress's TestRestartedBackendReturnsWithinOneHealthInterval).
func TestRestartedBackendServesAtTheFirstProbe(t *testing.T) {
	const interval = 5 * time.Second
	a, b := httpbackend.New(t, "a"), httpbackend.New(t, "b")
	clk := clock.NewMock()
	ch, client := channelClient(t, "static:///"+a.Addr()+","+b.Addr(), conn.WithClock(clk),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
		conn.WithHealthCheck(conn.HealthCheck{Checker: conn.HTTPHealthCheck{}, Interval: interval, Timeout: time.Second, Jitter: -1}),
		conn.WithBackoff(backoff.Config{BaseDelay: time.Minute, Multiplier: 1, MaxDelay: time.Minute}))
	served := map[string]int{}
	send := func(n int) {
		for range n {
			served[get(t, client, "http://svc/")]++
		}
	}
	connection := func() lb.ConnectivityState {
		s, err := ch.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return connectionOf(s.Balancer, b.Addr())
	}
	eventually(t, "both backends serve", func() bool { send(1); return served["a"] > 0 && served["b"] > 0 })

	b.Stop()
	// Requests that reach b fail over to a and report b unreachable: its
	// connection is redialled, refused, and backs off.
	eventually(t, "b's connection backs off", func() bool { send(1); return connection() == lb.TransientFailure })
	failedAt := clk.Now()
	restart(t, b)

	settle := func(d time.Duration) {
		clk.Add(d)
		if err := ch.Settle(guardCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	settle(interval - time.Nanosecond)
	before := served["b"]
	send(20)
	if served["b"] != before || connection() != lb.TransientFailure {
		t.Fatalf("1 ns before the first probe: b served %d requests, connection %v; want none, backing off", served["b"]-before, connection())
	}
	settle(time.Nanosecond) // the probe: it passes, and the backoff ends
	eventually(t, "b serves after the passing probe", func() bool { send(1); return served["b"] > before })
	if d := clk.Now().Sub(failedAt); d != interval {
		t.Fatalf("b served again %v after its failed dial on the channel's clock, want one interval (%v)", d, interval)
	}
}

// connectionOf returns the connection state of the endpoint addr in the
// tree n, or -1.
func connectionOf(n *lb.Node, addr string) lb.ConnectivityState {
	if n == nil {
		return -1
	}
	for _, e := range n.Endpoints {
		if e.Address == addr {
			return e.Connection
		}
	}
	for i := range n.Children {
		if s := connectionOf(&n.Children[i], addr); s != -1 {
			return s
		}
	}
	return -1
}
