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
	if !sum.Watch("failover").Seen {
		t.Errorf("no failover to the backup priority\n%s", out.String())
	}
	if o := sum.Outlier; o.Backend != "primary-b2" || !o.Ejected || !o.Back {
		t.Errorf("outlier detection: %+v, want primary-b2 ejected and back\n%s", o, out.String())
	}
	if !sum.Watch("return").Seen {
		t.Errorf("traffic did not return to the primary priority\n%s", out.String())
	}
	if len(sum.Phases) != 1 || len(sum.Phases[0].Shares) != 4 || sum.Phases[0].MaxShareError > 5 {
		t.Errorf("shares %+v, want one phase of 4 primary endpoints within 5 points\n%s", sum.Phases, out.String())
	}
	data, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(data, []byte("<svg")) {
		t.Errorf("timeline not written as SVG: %v", err)
	}
	for _, want := range []string{"primary-b2 answers 503", "outlier detection ejects primary-b2", "outlier detection returns primary-b2",
		"primary stopped", "primary restarted", "summary:", "timeline: " + svg, "debug page at http://127.0.0.1:",
		"plus outlier detection per priority (added by the demo", "reconnect backoff 100ms ×1.6 to 1s (default 1s to 10s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q\n%s", want, out.String())
		}
	}
	// The demo's private resolver scheme is nothing a user could use
	// (issue 28); the first line names the eds: target instead.
	if strings.Contains(out.String(), odScheme+":") {
		t.Errorf("output prints the private scheme %q\n%s", odScheme, out.String())
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
		var ue *demo.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("run(%q) = %v; want a one-line usage error containing %q", tc.args, err, tc.want)
		}
	}
}
