package stress

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
)

// slowRun is S1 of docs/simulation.md at a tenth of its time scale, on real
// servers: 11 HTTP backends on loopback answering in 17 ms, one client
// sending 1,000 requests/s for 6 s with a 100 ms deadline each, and
// backend 0 answering in 200 ms from 1.5 s to 4.5 s.
const (
	slowBackends = 11
	slowRate     = 1000
	slowRun      = 6 * time.Second
	slowFrom     = 1500 * time.Millisecond
	slowUntil    = 4500 * time.Millisecond
	slowDeadline = 100 * time.Millisecond
	slowNormal   = 17 * time.Millisecond
	slowSlow     = 200 * time.Millisecond
)

// slowResult is one policy's run: requests sent and answered within the
// deadline.
type slowResult struct {
	sent, within int64
}

func (r slowResult) String() string {
	return fmt.Sprintf("%.2f%% (%d of %d)", 100*float64(r.within)/float64(r.sent), r.within, r.sent)
}

// TestSlowBackendWithinDeadline runs the slow-backend load under
// round_robin, least_request_experimental and peak_ewma_experimental (its
// defaults) one after the other, and logs each one's share of requests
// answered within the deadline. It needs real time and a quiet machine,
// so it runs only under -long (make stress), and it skips its check when
// round_robin's figure shows that the machine did not keep up; the goal
// (issue 26) is 99.5% for peak_ewma_experimental.
func TestSlowBackendWithinDeadline(t *testing.T) {
	if !*long {
		t.Skip("timing-dependent: runs under -long (make stress)")
	}
	results := map[string]slowResult{}
	policies := []string{"round_robin", "least_request_experimental", "peak_ewma_experimental"}
	for _, policy := range policies {
		results[policy] = runSlowBackend(t, policy)
		t.Logf("%s: %v within %v", policy, results[policy], slowDeadline)
	}
	// round_robin's figure is arithmetic: the slow backend's 1/11 of the
	// requests for half the run fail, 95.5% succeed. Far below it, the
	// machine (or the race detector) did not keep up with the load, and
	// no policy's figure says anything about the policy.
	if rr := results["round_robin"]; float64(rr.within) < 0.9*float64(rr.sent) {
		t.Skipf("round_robin kept %v, not about 95.5%%: the machine did not keep up with %d requests/s; nothing to judge", rr, slowRate)
	}
	if r := results["peak_ewma_experimental"]; float64(r.within) < 0.995*float64(r.sent) {
		t.Errorf("peak_ewma_experimental: %v within the deadline, want at least 99.5%% (round_robin %v, least_request_experimental %v)",
			r, results["round_robin"], results["least_request_experimental"])
	}
}

// runSlowBackend runs the load once through a fresh channel running policy
// over fresh backends.
func runSlowBackend(t *testing.T, policy string) slowResult {
	var targets []string
	var backends []*httpbackend.Backend
	for i := range slowBackends {
		b := httpbackend.New(t, fmt.Sprintf("b%d", i))
		b.SetDelay(slowNormal)
		backends = append(backends, b)
		targets = append(targets, b.Addr())
	}
	ch, err := conn.New("static:///"+strings.Join(targets, ","),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"`+policy+`":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get := func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc/", nil)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err == nil && resp.StatusCode == http.StatusOK && ctx.Err() == nil
	}
	// Warm up: a connection to every backend, at a low rate.
	for range 4 * slowBackends {
		ctx, cancel := context.WithTimeout(guard(t), time.Second)
		get(ctx)
		cancel()
	}

	var (
		res slowResult
		wg  sync.WaitGroup
	)
	var within atomic.Int64
	start := time.Now()
	slowed, restored := false, false
	for k := 0; ; k++ {
		at := time.Duration(k) * time.Second / slowRate
		if at >= slowRun {
			break
		}
		if d := time.Until(start.Add(at)); d > 0 {
			time.Sleep(d)
		}
		if !slowed && at >= slowFrom {
			backends[0].SetDelay(slowSlow)
			slowed = true
		}
		if !restored && at >= slowUntil {
			backends[0].SetDelay(slowNormal)
			restored = true
		}
		res.sent++
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), slowDeadline)
			defer cancel()
			if get(ctx) {
				within.Add(1)
			}
		}()
	}
	wg.Wait()
	res.within = within.Load()
	return res
}
