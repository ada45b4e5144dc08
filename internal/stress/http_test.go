package stress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/backoff"
)

// Real HTTP backends behind adapters/nethttp under concurrent load: one is
// killed and restarted, then all are killed and restored. Every request
// gets a response or an error, none outlives its deadline by more than a
// moment, traffic reaches every backend again soon after it is restored,
// and goroutines (TestMain's goleak) and file descriptors are back to
// their baseline at the end.
func TestHTTPBackendsKilledAndRestored(t *testing.T) {
	baseline := openFDs(t)
	const reqTimeout = 2 * time.Second
	maxBackoff := 200 * time.Millisecond
	backends := []*httpbackend.Backend{httpbackend.New(t, "a"), httpbackend.New(t, "b"), httpbackend.New(t, "c")}
	var targets []string
	for _, b := range backends {
		targets = append(targets, b.Addr())
	}
	ch, err := conn.New("static:///"+strings.Join(targets, ","),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"weighted_round_robin":{}}]}`),
		conn.WithBackoff(backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxBackoff}))
	if err != nil {
		t.Fatal(err)
	}
	tr := &nethttp.Transport{Channel: ch}
	client := &http.Client{Transport: tr}

	var counts tally
	var mu sync.Mutex
	lastSeen := map[string]time.Time{}
	load := startWorkers(8, func() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), reqTimeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc/", nil)
		resp, err := client.Do(req)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if took := time.Since(start); took > reqTimeout+time.Second {
			counts.fail("requests past their deadline", fmt.Errorf("took %v", took))
		}
		if err != nil {
			counts.add("errors", 1)
			if errors.Is(err, context.DeadlineExceeded) {
				counts.add("errors: deadline", 1)
			}
			return
		}
		counts.add("responses", 1)
		mu.Lock()
		lastSeen[string(body)] = time.Now()
		mu.Unlock()
	})
	// servedSince waits until every backend has answered after since, and
	// returns how long that took.
	servedSince := func(since time.Time) time.Duration {
		ctx := guard(t)
		for {
			mu.Lock()
			all := true
			for _, b := range backends {
				if !lastSeen[b.Name()].After(since) {
					all = false
				}
			}
			mu.Unlock()
			if all {
				return time.Since(since)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("not every backend answered within %v of %v: %v", time.Since(since), since, lastSeen)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	servedSince(time.Now())
	rounds := count(2, 20)
	var worst time.Duration
	for range rounds {
		backends[1].Stop()
		time.Sleep(span(200*time.Millisecond, time.Second)) // load runs against two backends
		restartBackend(t, backends[1])
		worst = max(worst, servedSince(time.Now()))
		for _, b := range backends {
			b.Stop()
		}
		time.Sleep(span(200*time.Millisecond, time.Second)) // every request fails
		for _, b := range backends {
			restartBackend(t, b)
		}
		worst = max(worst, servedSince(time.Now()))
	}
	load.end()
	tr.CloseIdleConnections()
	ch.Close()
	t.Logf("%d rounds of kill/restart: %v; slowest recovery %v (backoff at most %v)", rounds, &counts, worst, maxBackoff)
	// Recovery waits for at most one backoff delay, plus a dial and a
	// request; the slack is for a loaded 2-core machine under -race.
	if limit := maxBackoff + 3*time.Second; worst > limit {
		t.Errorf("slowest recovery %v, want within the backoff schedule (%v plus slack: %v)", worst, maxBackoff, limit)
	}
	if n := counts.get("requests past their deadline"); n > 0 {
		t.Fatalf("%d requests outlived their deadline: %v", n, counts.errs)
	}
	for _, b := range backends {
		b.Stop()
	}
	waitFDs(t, baseline)
}

func restartBackend(t *testing.T, b *httpbackend.Backend) {
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
}
