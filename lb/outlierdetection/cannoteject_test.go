package outlierdetection

import (
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// describeWarning returns the policy node's Warning.
func (e *env) describeWarning() string {
	var n lb.Node
	e.h.Do(func() { n = e.b().Describe() })
	return n.Warning
}

// A config that cannot eject in the tree it has (minimumHosts above the
// number of addresses, or no address reaching requestVolume calls) is
// logged once, at WARN, and shown in the policy's node while it lasts
// (issue 28): it was silent, and the README's own example never ejected.
func TestConfigThatCannotEjectIsReportedOnceAndDescribed(t *testing.T) {
	t.Parallel()
	logs := &lbtest.Logs{}
	e := newEnv(t, lbtest.WithLogger(slog.New(logs)))
	hosts := `{"interval": "10s", "failurePercentageEjection": {"threshold": 85}, "childPolicy": [{"test_addr_picker": {}}]}`
	e.update(hosts, "a", "b", "c")
	e.update(hosts, "a", "b", "c")
	e.h.Advance(10 * time.Second)
	const tooFew = "outlierdetection: failurePercentageEjection cannot eject: minimumHosts is 5, but the tree has 3 address(es)"
	if n := logs.Count(slog.LevelWarn, tooFew); n != 1 {
		t.Fatalf("%d warnings %q, want 1:\n%s", n, tooFew, logs)
	}
	if got := e.describeWarning(); got != tooFew {
		t.Fatalf("node warning %q, want %q", got, tooFew)
	}

	volume := `{"interval": "10s", "failurePercentageEjection": {"threshold": 85, "minimumHosts": 3, "requestVolume": 20}, "childPolicy": [{"test_addr_picker": {}}]}`
	e.update(volume, "a", "b", "c")
	if got := e.describeWarning(); got != "" {
		t.Fatalf("node warning %q after a config that can eject, want none", got)
	}
	const quiet = "outlierdetection: failurePercentageEjection did not run in the last interval: 2 of 3 addresses had requestVolume (20) calls, and minimumHosts is 3"
	for range 2 {
		e.calls("a", 20, 0)
		e.calls("b", 20, 20)
		e.calls("c", 19, 0)
		e.h.Advance(10 * time.Second)
	}
	if n := logs.Count(slog.LevelWarn, quiet); n != 1 {
		t.Fatalf("%d warnings %q over two quiet intervals, want 1:\n%s", n, quiet, logs)
	}
	if got := e.describeWarning(); got != quiet {
		t.Fatalf("node warning %q, want %q", got, quiet)
	}
	e.calls("a", 20, 0)
	e.calls("b", 20, 20)
	e.calls("c", 20, 0)
	e.h.Advance(10 * time.Second)
	e.wantEjected("b")
	if got := e.describeWarning(); got != "" {
		t.Fatalf("node warning %q after a sweep that ran, want none", got)
	}
	if strings.Count(logs.String(), "cannot eject")+strings.Count(logs.String(), "did not run") != 2 {
		t.Fatalf("logs:\n%s\nwant exactly the two warnings", logs)
	}
}

// The README's outlier_detection_experimental config ejects a failing
// backend among three, the README's own setup (issue 28): with A50's
// default minimumHosts of 5 it never could.
func TestREADMEConfigEjectsAmongThree(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, row, ok := strings.Cut(string(readme), "| `outlier_detection_experimental` | `")
	if !ok {
		t.Fatal("README has no outlier_detection_experimental row in its policy table")
	}
	row, _, _ = strings.Cut(row, "`")
	var cfg map[string]any
	if err := json.Unmarshal([]byte(row), &cfg); err != nil {
		t.Fatalf("README's config %s: %v", row, err)
	}
	cfg["childPolicy"] = []any{map[string]any{"test_addr_picker": map[string]any{}}}
	js, _ := json.Marshal(cfg)
	logs := &lbtest.Logs{}
	e := newEnv(t, lbtest.WithLogger(slog.New(logs)))
	e.update(string(js), "a", "b", "c")
	interval, err := time.ParseDuration(cfg["interval"].(string))
	if err != nil {
		t.Fatal(err)
	}
	e.callsFailingOne(100, "b", 100, "a", "b", "c")
	e.h.Advance(interval)
	e.wantEjected("b")
	if n := logs.Count(slog.LevelWarn, "outlierdetection:"); n != 0 {
		t.Fatalf("the README's config warned:\n%s", logs)
	}
}
