package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/demo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo in a short mode: seven seconds of real traffic through a real
// management server, the listener resolver (LDS, RDS, CDS, EDS), the
// channel and the net/http adapter. The traffic must follow every good
// snapshot before the next one (first request, share after a weight
// shift, a new endpoint, the failover by priority, the restore,
// least_request steering off a slow backend, then the route's canary
// split shifted from 100:0 to 90:10, 50:50 and 0:100, each share counted
// over a window of requests after its push), stay put on the bad one, and
// lbkit must ACK each good snapshot and NACK the bad one with its detail.
func TestDemoFollowsEverySnapshot(t *testing.T) {
	const maxLate = 150 * time.Millisecond
	svg := filepath.Join(t.TempDir(), "timeline.svg")
	var out bytes.Buffer
	var sum *demo.Summary
	// A machine too busy to run the script on time runs steps back to
	// back, or leaves a watch too little time before the next push (each
	// gets about 640 ms of real time, in which an ACK and the requests
	// that measure a share must fit); such a run proves nothing and runs
	// again. A client that does not follow a snapshot misses its watch in
	// every run, so three runs still catch it.
	watched := []string{"v1", "v2", "v3", "v4", "v6", "v6 b-2", "slow", "v7", "v8", "v9", "v10"}
	missed := func(sum *demo.Summary) []string {
		var names []string
		for _, name := range watched {
			if !sum.Watch(name).Seen {
				names = append(names, name)
			}
		}
		return names
	}
	for attempt := 1; ; attempt++ {
		out.Reset()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var err error
		sum, err = run(ctx, []string{"-duration", "7s", "-rate", "400", "-svg", svg}, &out)
		cancel()
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		if attempt == 3 {
			break
		}
		if sum.Late > maxLate {
			t.Logf("attempt %d: a step ran %v late; running again", attempt, sum.Late)
			continue
		}
		if m := missed(sum); len(m) > 0 {
			t.Logf("attempt %d: the traffic did not follow %v before the next push; running again", attempt, m)
			continue
		}
		break
	}
	if sum.Late > maxLate {
		t.Fatalf("every run had a step %v late or more (the machine is too busy)\n%s", maxLate, out.String())
	}
	for _, name := range missed(sum) {
		t.Errorf("the traffic did not follow %s before the next push\n%s", name, out.String())
	}
	if w := sum.Watch("v5"); w.Seen {
		t.Errorf("the traffic left zone c %v after the bad snapshot v5\n%s", w.After, out.String())
	}
	if sum.Errors != 0 {
		t.Errorf("%d requests failed\n%s", sum.Errors, out.String())
	}
	notes := strings.Join(sum.Notes, "\n")
	for _, want := range []string{"v1: lbkit ACKed", "v2: lbkit ACKed", "v3: lbkit ACKed", "v4: lbkit ACKed", "v6: lbkit ACKed", "v7: lbkit ACKed",
		"v5: lbkit NACKed the endpoints", "keeping v4", "appears twice",
		"v8: lbkit ACKed the route configuration", "v9: lbkit ACKed the route configuration", "v10: lbkit ACKed the route configuration"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes lack %q\n%s", want, out.String())
		}
	}
	for _, want := range []string{"v2: zones a:b 1:4", "v3: b-3 added, b-2 draining", "v5 NACKed", "v8: route stable:canary 90:10", "v10: route stable:canary 0:100", "summary:", "timeline: " + svg,
		"debug page at http://127.0.0.1:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q\n%s", want, out.String())
		}
	}
	data, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(data, []byte("<svg")) || !bytes.Contains(data, []byte("v4: zone c to priority 0")) || !bytes.Contains(data, []byte("v9: route stable:canary 50:50")) {
		t.Errorf("timeline not written as SVG with the pushes: %v", err)
	}
}

func TestBadFlagsAreAUsageError(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"-rate", "0"}, "-rate 0"},
		{[]string{"-duration", "2s"}, "needs at least 3s"},
		{[]string{"-svg", ""}, "-svg: empty path"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		_, err := run(context.Background(), tc.args, &bytes.Buffer{})
		var ue *demo.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("run(%q) = %v; want a one-line usage error containing %q", tc.args, err, tc.want)
		}
	}
}
