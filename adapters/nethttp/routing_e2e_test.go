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

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/route"
	"github.com/lbkit/lbkit/lb/routing"
)

// clusterServers starts one real HTTP server per cluster name, answering
// with the name, and returns the addresses of all of them, each with its
// cluster as its hierarchical path. A request for /slow is announced on
// slow and answered only when its client gives up.
func clusterServers(t *testing.T, slow chan<- struct{}, names ...string) []resolver.Address {
	var addrs []resolver.Address
	for _, name := range names {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				slow <- struct{}{}
				<-r.Context().Done()
				return
			}
			fmt.Fprint(w, name)
		}))
		t.Cleanup(s.Close)
		addrs = append(addrs, hierarchy.Set(resolver.Address{Addr: strings.TrimPrefix(s.URL, "http://")}, []string{name}))
	}
	return addrs
}

// canaryRoutes: requests with x-canary: 1 go to canary alone; the rest are
// split stable/canary by weight; /slow has a 50 ms timeout.
func canaryRoutes(stable, canary uint32) routing.Policy {
	return routing.Policy{
		Routes: route.Config{VirtualHosts: []route.VirtualHost{{
			Domains: []string{"shop.example.com"},
			Routes: []route.Route{
				{Match: route.Match{Prefix: ptr("/"), Headers: []route.HeaderMatcher{{Name: "x-canary", ExactMatch: ptr("1")}}},
					Action: &route.Action{Cluster: "canary"}},
				{Match: route.Match{Path: ptr("/slow")}, Action: &route.Action{Cluster: "stable", Timeout: 50 * time.Millisecond}},
				{Match: route.Match{Prefix: ptr("/")}, Action: &route.Action{WeightedClusters: &route.WeightedClusters{
					Clusters: []route.ClusterWeight{{Name: "stable", Weight: stable}, {Name: "canary", Weight: canary}}}}},
			},
		}}},
		Clusters: map[string]lb.PolicyConfig{"stable": roundrobin.Config{}, "canary": roundrobin.Config{}},
	}
}

func ptr[T any](v T) *T { return &v }

func serviceConfig(t *testing.T, p lb.PolicyConfig) []byte {
	t.Helper()
	sc, err := lb.MarshalServiceConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(sc)
}

// routedGet sends one request and returns the name of the cluster that answered.
func routedGet(t *testing.T, client *http.Client, path string, header ...string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://shop.example.com"+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// Routing end to end over real servers: a 90/10 split is exact over
// 10,000 requests (EDF), a header-matched route takes exactly its
// requests, a new route config moves traffic with the next request, and a
// request no route takes fails with the reason.
func TestRoutingSplitsMatchesAndMovesTraffic(t *testing.T) {
	addrs := clusterServers(t, make(chan struct{}), "stable", "canary")
	r := manual.NewBuilder("routing", manual.WithInitialState(resolver.State{Addresses: addrs, ServiceConfig: serviceConfig(t, canaryRoutes(90, 10))}))
	ch, err := conn.New("routing:///shop", conn.WithResolver(r))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	const n = 10_000
	count := func(header ...string) map[string]int {
		got := map[string]int{}
		for range n {
			got[routedGet(t, client, "/api", header...)]++
		}
		return got
	}
	split := count()
	if d := split["stable"] - 9000; d < -100 || d > 100 {
		t.Fatalf("90/10 split over %d requests: %v, want stable within 1 point of 90%%", n, split)
	}
	t.Logf("90/10: %v", split)
	for range 200 {
		if got := routedGet(t, client, "/api", "X-Canary", "1"); got != "canary" {
			t.Fatalf("a request with x-canary: 1 went to %s", got)
		}
	}

	// Everything to the canary, then 50/50: once the channel has the new
	// config, the very next request follows it.
	update := func(stable, canary uint32) {
		t.Helper()
		if err := r.UpdateState(resolver.State{Addresses: addrs, ServiceConfig: serviceConfig(t, canaryRoutes(stable, canary))}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ch.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	update(0, 1)
	for i := range 100 {
		if got := routedGet(t, client, "/api"); got != "canary" {
			t.Fatalf("request %d after moving everything to the canary went to %s", i, got)
		}
	}
	update(1, 1)
	half := map[string]int{}
	for range 1000 {
		half[routedGet(t, client, "/api")]++
	}
	if half["stable"] != 500 {
		t.Fatalf("after the update to 50/50: %v, want 500 each", half)
	}

	// Another authority: no virtual host, the request fails at once.
	req, _ := http.NewRequest(http.MethodGet, "http://elsewhere/api", nil)
	if _, err := client.Do(req); !errors.Is(err, lb.ErrDropped) || !strings.Contains(err.Error(), "no virtual host") {
		t.Fatalf("a request for another authority: %v, want a drop naming the virtual host", err)
	}
}

// A route's timeout ends the request exactly when it is due on the
// channel's clock: not 1 ns before, and at once then.
func TestRouteTimeoutRunsOnTheChannelsClock(t *testing.T) {
	slow := make(chan struct{}, 1)
	addrs := clusterServers(t, slow, "stable", "canary")
	mock := clock.NewMock()
	r := manual.NewBuilder("routing", manual.WithInitialState(resolver.State{Addresses: addrs, ServiceConfig: serviceConfig(t, canaryRoutes(90, 10))}))
	ch, err := conn.New("routing:///shop", conn.WithResolver(r), conn.WithClock(mock))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	// A first request to stable opens the connection /slow reuses: a dial
	// would read the mock deadline against the real time.
	for got := ""; got != "stable"; {
		got = routedGet(t, client, "/warm")
	}

	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://shop.example.com/slow", nil)
		resp, err := client.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-slow:
	case <-time.After(10 * time.Second): // a guard against a hang only
		t.Fatal("the /slow request did not reach the server")
	}
	mock.Add(50*time.Millisecond - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("the request ended before its timeout: %v", err)
	default:
	}
	mock.Add(time.Nanosecond)
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("GET /slow: %v, want the route's deadline", err)
		}
	case <-time.After(10 * time.Second): // a guard against a hang only
		t.Fatal("the request outlived its route's timeout")
	}
}
