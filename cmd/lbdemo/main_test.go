package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/conn"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo in a short mode: a few seconds of real traffic through the
// whole stack (eds resolver, priority, weighted_target, weighted_round_robin,
// the channel and the net/http adapter, with outlier detection at the top
// of each priority). primary-b2 must be ejected while it answers 503 and
// come back, failover must happen, traffic must return, and priority 0's
// shares must be within 5 points of the weights.
func TestDemoShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 12 s of real traffic")
	}
	svg := filepath.Join(t.TempDir(), "timeline.svg")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := run(ctx, []string{"-duration", "12s", "-rate", "200", "-svg", svg}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !sum.FailedOver {
		t.Errorf("no failover to the backup priority\n%s", out.String())
	}
	if o := sum.Outlier; o.Backend != "primary-b2" || !o.Ejected || !o.Back {
		t.Errorf("outlier detection: %+v, want primary-b2 ejected and back\n%s", o, out.String())
	}
	if !sum.Returned {
		t.Errorf("traffic did not return to the primary priority\n%s", out.String())
	}
	if len(sum.Shares) != 4 || sum.MaxShareError > 5 {
		t.Errorf("shares %+v (largest error %.2f points), want 4 primary endpoints within 5 points\n%s", sum.Shares, sum.MaxShareError, out.String())
	}
	data, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(data, []byte("<svg")) {
		t.Errorf("timeline not written as SVG: %v", err)
	}
	for _, want := range []string{"primary-b2 answers 503", "primary-b2 ejected", "primary-b2 back in service",
		"primary stopped", "primary restarted", "summary:", "timeline: " + svg, "debug page at http://127.0.0.1:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q\n%s", want, out.String())
		}
	}
}

func TestBadInputIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	badCLA := filepath.Join(dir, "bad.json")
	os.WriteFile(badCLA, []byte(`{"cluster_name":"x","endpoints":[{"priority":1,"lb_endpoints":[]}]}`), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"-rate", "0"}, "-rate 0"},
		{[]string{"-duration", "2s"}, "needs at least 3s"},
		{[]string{"-cla", badCLA, "-target", "dns:///x:1"}, "cannot be used together"},
		{[]string{"-cla", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"-cla", badCLA}, "endpoints"},
		{[]string{"-target", "dns:///host:99999"}, "invalid port"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		_, err := run(context.Background(), tc.args, &bytes.Buffer{})
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("run(%q) = %v; want a one-line usage error containing %q", tc.args, err, tc.want)
		}
	}
}

// The demo serves the debug page while it runs and prints its URL.
func TestDemoServesTheDebugPage(t *testing.T) {
	ch, err := conn.New("passthrough:///127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var out bytes.Buffer
	stop, err := serveDebugPage("127.0.0.1:0", ch, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	line := strings.TrimSpace(out.String())
	_, url, ok := strings.Cut(line, "debug page at ")
	url, _, _ = strings.Cut(url, " ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("printed %q, want the debug page's URL", line)
	}
	resp, err := http.Get(url + "?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"target": "passthrough:///127.0.0.1:1"`) {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
}
