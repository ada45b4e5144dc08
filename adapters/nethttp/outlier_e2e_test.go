package nethttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/outlierdetection"
)

// flakyBackend is an HTTP server that answers with its name, with status
// 503 while failing is set.
type flakyBackend struct {
	name    string
	failing atomic.Bool
	srv     *httptest.Server
}

func startFlaky(t *testing.T, name string) *flakyBackend {
	b := &flakyBackend{name: name}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if b.failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, b.name)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// capturing is a policy (outlier_detection_experimental,
// weighted_round_robin) under another name, which hands the test the
// tree's serializer so the test can advance the channel's mock clock one
// timer at a time and wait for the consequences.
type capturing struct {
	name  string
	inner interface {
		lb.Builder
		lb.ConfigParser
	}
	mu  sync.Mutex
	ser *lb.Serializer
}

func (b *capturing) Name() string { return b.name }
func (b *capturing) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return b.inner.ParseConfig(raw)
}
func (b *capturing) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b.mu.Lock()
	b.ser = lb.SerializerOf(opts.Scheduler)
	b.mu.Unlock()
	return b.inner.Build(cc, opts)
}

func (b *capturing) serializer(t *testing.T) *lb.Serializer {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ser == nil {
		t.Fatalf("policy %s was not built on a *lb.Serializer", b.name)
	}
	return b.ser
}

// odFixture is a channel running outlier detection over five flaky
// backends, on a mock clock, behind an http.Client.
type odFixture struct {
	t        *testing.T
	backends []*flakyBackend
	mock     *clock.Mock
	od       *capturing
	client   *http.Client
}

func newODFixture(t *testing.T, name string, maxEjectionPercent int) *odFixture {
	f := &odFixture{t: t, mock: clock.NewMock(), od: &capturing{name: name, inner: outlierdetection.Builder{}}}
	var addrs []string
	for i := range 5 {
		b := startFlaky(t, fmt.Sprintf("b%d", i))
		f.backends = append(f.backends, b)
		addrs = append(addrs, hostOf(b.srv))
	}
	cfg := fmt.Sprintf(`{"loadBalancingConfig": [{%q: {
		"interval": "10s", "baseEjectionTime": "30s", "maxEjectionPercent": %d,
		"failurePercentageEjection": {"threshold": 50, "minimumHosts": 5, "requestVolume": 10},
		"childPolicy": [{"weighted_round_robin": {}}]}}]}`, name, maxEjectionPercent)
	ch, err := conn.New("fixed:///svc", conn.WithResolver(staticBuilder{addrs: addrs}),
		conn.WithClock(f.mock), conn.WithRandSeed(1, 2), conn.WithDefaultServiceConfig(cfg),
		conn.WithRegistry(lb.NewRegistry(f.od)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	t.Cleanup(tr.CloseIdleConnections)
	f.client = &http.Client{Transport: tr}
	return f
}

// request sends one request and returns the name of the backend that
// answered and its status.
func (f *odFixture) request() (string, int) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // hang guard only
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc/", nil)
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("reading body: %v", err)
	}
	return string(body), resp.StatusCode
}

// spread sends requests until every backend has answered at least n, and
// returns how many each answered.
func (f *odFixture) spread(n int) map[string]int {
	f.t.Helper()
	seen := make(map[string]int)
	for sent := 0; ; sent++ {
		done := true
		for _, b := range f.backends {
			done = done && seen[b.name] >= n
		}
		if done {
			return seen
		}
		if sent > 100*n {
			f.t.Fatalf("after %d requests the backends answered %v, want %d each", sent, seen, n)
		}
		name, _ := f.request()
		seen[name]++
	}
}

// count sends n requests and counts the backends that answered.
func (f *odFixture) count(n int) map[string]int {
	f.t.Helper()
	seen := make(map[string]int)
	for range n {
		name, _ := f.request()
		seen[name]++
	}
	return seen
}

// advance moves the mock clock by d, one timer deadline of the channel's
// tree at a time, waiting at each until the tree is idle.
func (f *odFixture) advance(d time.Duration) {
	f.t.Helper()
	lbtest.AdvanceSerializers(f.t, f.mock, d, f.od.serializer(f.t))
}

// A backend answering 503 is ejected at the first sweep, one interval after
// the config arrived, and takes requests again exactly when the base
// ejection time is over.
func TestOutlierDetectionOverHTTPEjectsA503BackendAndBringsItBack(t *testing.T) {
	f := newODFixture(t, "test_od_e2e_one", 10)
	bad := f.backends[2]
	bad.failing.Store(true)
	f.spread(10)
	f.advance(10 * time.Second)
	if seen := f.count(50); seen[bad.name] != 0 || len(seen) != 4 {
		t.Fatalf("after the sweep: answered by %v, want the four healthy backends only", seen)
	}
	bad.failing.Store(false)
	f.advance(30*time.Second - time.Nanosecond)
	if seen := f.count(20); seen[bad.name] != 0 {
		t.Fatalf("1 ns before the base ejection time ends: answered by %v, want no %s", seen, bad.name)
	}
	f.advance(time.Nanosecond)
	if seen := f.count(20); seen[bad.name] == 0 {
		t.Fatalf("after the base ejection time: answered by %v, want %s back", seen, bad.name)
	}
}

// With every backend failing, no more than maxEjectionPercent of them are
// ejected: 40% of five is two.
func TestOutlierDetectionOverHTTPHoldsMaxEjectionPercent(t *testing.T) {
	f := newODFixture(t, "test_od_e2e_all", 40)
	for _, b := range f.backends {
		b.failing.Store(true)
	}
	f.spread(10)
	f.advance(10 * time.Second)
	if seen := f.count(60); len(seen) != 3 {
		t.Fatalf("after the sweep: answered by %v, want exactly three backends (two ejected)", seen)
	}
}
