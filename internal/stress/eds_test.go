//go:build unix

package stress

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// claJSON is an assignment with one locality per address group, at the
// given priorities.
func claJSON(groups [][]string, prios []int) string {
	var locs []string
	for i, g := range groups {
		var eps []string
		for _, a := range g {
			host, port, _ := strings.Cut(a, ":")
			eps = append(eps, fmt.Sprintf(`{"endpoint":{"address":{"socket_address":{"address":%q,"port_value":%s}}}}`, host, port))
		}
		locs = append(locs, fmt.Sprintf(`{"locality":{"zone":"z%d"},"priority":%d,"load_balancing_weight":%d,"lb_endpoints":[%s]}`,
			i, prios[i], i+1, strings.Join(eps, ",")))
	}
	return `{"cluster_name":"stress","endpoints":[` + strings.Join(locs, ",") + `]}`
}

// The eds file is rewritten 1,000 times (atomically, by rename), and in
// between truncated, deleted, replaced by a directory and by a FIFO, while
// 16 goroutines pick fail-fast. Every version names only live backends, so
// no pick may fail: a broken file keeps the last good state. Close returns
// promptly, and nothing leaks.
func TestEDSFileAbuse(t *testing.T) {
	baseline := openFDs(t)
	var addrs []string
	for range 4 {
		addrs = append(addrs, startTCPBackend(t).addr)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "cla.json")
	versions := []string{
		claJSON([][]string{addrs[:2], addrs[2:]}, []int{0, 0}),
		claJSON([][]string{addrs[:1], addrs[1:3]}, []int{0, 1}),
		claJSON([][]string{addrs[3:], addrs[:3]}, []int{0, 1}),
	}
	replace := func(content string) {
		tmp := filepath.Join(dir, "next.json")
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		removeAll(file)
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	replace(versions[0])
	b, err := eds.NewBuilder(eds.WithPollInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.New("eds://"+file, conn.WithResolver(b), conn.WithRandSeed(5, 6),
		conn.WithBackoff(backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 50 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := guard(t)
	if _, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true}); err != nil {
		t.Fatalf("first pick: %v", err)
	}

	var counts tally
	pickers := startWorkers(16, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := ch.Pick(ctx, conn.PickOptions{})
		cancel()
		if err != nil {
			counts.fail("failed picks", err)
			return
		}
		if r.Done != nil {
			r.Done(lb.DoneInfo{})
		}
		counts.add("picks", 1)
	})
	abuses := []func(){
		func() { os.WriteFile(file, nil, 0o600) },                        // truncated
		func() { os.WriteFile(file, []byte(`{"cluster_name":`), 0o600) }, // half written
		func() { removeAll(file) },                                       // deleted
		func() { removeAll(file); os.Mkdir(file, 0o700) },                // a directory
		func() { removeAll(file); syscall.Mkfifo(file, 0o600) },          // a FIFO
	}
	rewrites := count(1000, 10000)
	for i := range rewrites {
		replace(versions[i%len(versions)])
		if i%50 == 25 {
			abuses[i/50%len(abuses)]()
			counts.add("abuses", 1)
			time.Sleep(3 * time.Millisecond) // a few polls see the broken file
		}
	}
	pickers.end()
	closeReturns(t, ch)
	counts.add("rewrites", rewrites)
	t.Logf("eds file abuse: %v", &counts)
	if n := counts.get("failed picks"); n > 0 {
		t.Fatalf("%d failed picks: %v", n, counts.errs)
	}
	waitFDs(t, baseline+4) // the four backends are still up
}

// removeAll removes whatever is at path: a file, a FIFO or a directory.
func removeAll(path string) { os.RemoveAll(path) }
