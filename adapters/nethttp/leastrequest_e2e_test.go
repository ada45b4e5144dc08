package nethttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
)

// slowFarm is three real HTTP servers on loopback: two fast, one slow. The
// slow one's slowness is counted in requests, not time: it holds each
// request until the fast servers have answered ten more (or until every
// worker is waiting on it, or a worker leaves), so the test needs no clock.
type slowFarm struct {
	workers    int32
	holding    atomic.Bool // set while workers run
	fastServed atomic.Int64
	waiting    atomic.Int32
	tick       chan struct{} // one token per ten fast answers
	servers    []*httptest.Server
}

func newSlowFarm(t *testing.T, workers int) *slowFarm {
	f := &slowFarm{workers: int32(workers), tick: make(chan struct{}, 1024)}
	for _, name := range []string{"fast1", "fast2", "slow"} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if name == "slow" {
				f.hold(r)
			} else if f.fastServed.Add(1)%10 == 0 {
				f.release()
			}
			fmt.Fprint(w, name)
		}))
		t.Cleanup(s.Close)
		f.servers = append(f.servers, s)
	}
	return f
}

// hold waits for a token, unless every worker is already waiting here.
func (f *slowFarm) hold(r *http.Request) {
	defer f.waiting.Add(-1)
	if f.waiting.Add(1) == f.workers || !f.holding.Load() {
		return
	}
	select {
	case <-f.tick:
	case <-r.Context().Done():
	}
}

// release lets one held request go (or the next one through at once).
func (f *slowFarm) release() {
	select {
	case f.tick <- struct{}{}:
	default:
	}
}

// run sends total requests from the farm's workers through a channel
// running policy, and counts the answers by server.
func (f *slowFarm) run(t *testing.T, policy string, total int) map[string]int {
	var hosts []string
	for _, s := range f.servers {
		hosts = append(hosts, strings.TrimPrefix(s.URL, "http://"))
	}
	ch, err := conn.New("static:///"+strings.Join(hosts, ","),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"`+policy+`":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	// Connect every server first, so that the run starts with all READY.
	for seen := map[string]bool{}; len(seen) < 3; {
		seen[get(t, client, "http://svc/")] = true
	}

	var (
		mu     sync.Mutex
		counts = map[string]int{}
		budget atomic.Int64
		wg     sync.WaitGroup
		errs   = make(chan error, f.workers)
	)
	budget.Store(int64(total))
	f.holding.Store(true)
	defer f.holding.Store(false)
	for range f.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer f.release() // a worker leaving frees one held request
			for budget.Add(-1) >= 0 {
				resp, err := client.Get("http://svc/")
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				counts[string(b)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return counts
}

// TestLeastRequestSlowBackendGetsFewer: through conn and the net/http
// Transport, a slow backend (ten times slower, counted in requests)
// receives measurably fewer requests under least_request_experimental than
// each fast one, while round_robin, which ignores load, gives it its third.
func TestLeastRequestSlowBackendGetsFewer(t *testing.T) {
	const workers, total = 6, 900
	f := newSlowFarm(t, workers)
	rr := f.run(t, "round_robin", total)
	lr := f.run(t, "least_request_experimental", total)
	t.Logf("round_robin %v; least_request_experimental %v", rr, lr)
	if rr["slow"] < total/3-workers || rr["slow"] > total/3+workers {
		t.Errorf("round_robin: slow got %d of %d, want about a third", rr["slow"], total)
	}
	fast := min(lr["fast1"], lr["fast2"])
	if lr["slow"]*2 > fast {
		t.Errorf("least_request_experimental: slow got %d, the fast ones at least %d; want under half of that", lr["slow"], fast)
	}
}
