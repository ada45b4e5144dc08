package nethttp_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
)

// restart starts b again on its port, failing the test on an error.
func restart(t *testing.T, b *httpbackend.Backend) {
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
}

// End to end (issue: lb/resolver/eds): an Envoy ClusterLoadAssignment file
// read by the eds resolver, a conn channel running priority →
// weighted_target → weighted_round_robin, and real HTTP servers. Locality
// weights 1:3 split traffic 1:3 within 2% over 4000 requests; stopping the
// primary priority moves traffic to the secondary, restarting it brings
// traffic back.
func TestEDSEndToEnd(t *testing.T) {
	a, b, backup := httpbackend.New(t, "a"), httpbackend.New(t, "b"), httpbackend.New(t, "backup")
	cla := fmt.Sprintf(`{
	  "clusterName": "e2e",
	  "endpoints": [
	    {"locality": {"zone": "za"}, "loadBalancingWeight": 1, "priority": 0,
	     "lbEndpoints": [{"endpoint": {"address": {"socketAddress": {"address": "127.0.0.1", "portValue": %s}}}}]},
	    {"locality": {"zone": "zb"}, "loadBalancingWeight": 3, "priority": 0,
	     "lbEndpoints": [{"endpoint": {"address": {"socketAddress": {"address": "127.0.0.1", "portValue": %s}}}}]},
	    {"locality": {"zone": "zc"}, "loadBalancingWeight": 1, "priority": 1,
	     "lbEndpoints": [{"endpoint": {"address": {"socketAddress": {"address": "127.0.0.1", "portValue": %s}}}}]}
	  ]}`, a.Port(), b.Port(), backup.Port())
	path := filepath.Join(t.TempDir(), "cla.json")
	if err := os.WriteFile(path, []byte(cla), 0o600); err != nil {
		t.Fatal(err)
	}
	ch, err := conn.New("eds://"+path, conn.WithBackoff(backoff.Config{
		BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 500 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	call := func() string {
		resp, err := client.Get("http://e2e/")
		if err != nil {
			return "error"
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	// Wait until both primary localities serve, then count 4000 requests.
	deadline := time.Now().Add(10 * time.Second)
	for seen := map[string]bool{}; !seen["a"] || !seen["b"]; seen[call()] = true {
		if time.Now().After(deadline) {
			t.Fatalf("primary localities never both served: %v", seen)
		}
	}
	counts := map[string]int{}
	for range 4000 {
		counts[call()]++
	}
	if share := float64(counts["a"]) / 4000; share < 0.23 || share > 0.27 || counts["a"]+counts["b"] != 4000 {
		t.Fatalf("counts %v: want a:b = 1:3 within 2%% and nothing else", counts)
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for got := call(); got != want; got = call() {
			if time.Now().After(deadline) {
				t.Fatalf("traffic never reached %s (last: %s)", want, got)
			}
		}
	}
	a.Stop()
	b.Stop()
	waitFor("backup")
	restart(t, a)
	restart(t, b)
	waitFor("b")
}
