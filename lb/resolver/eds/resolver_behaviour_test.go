package eds_test

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

func TestRegistered(t *testing.T) {
	if b := resolver.Get(eds.Scheme); b == nil || b.Scheme() != "eds" {
		t.Fatalf("resolver.Get(%q) = %v, want the eds builder", eds.Scheme, b)
	}
}

func TestTargets(t *testing.T) {
	tests := []struct {
		target  string
		wantErr string // "" when valid
	}{
		{"eds:///etc/lb/cla.json", ""},
		{"eds:/etc/lb/cla.json", ""},
		{"eds:etc/lb/cla.json", `relative file path "etc/lb/cla.json" not supported`},
		{"eds://host/etc/cla.json", `authority "host" not supported`},
		{"eds:///", "empty file path"},
		{"eds:", "empty file path"},
		{"eds:///etc/lb/", "ends with '/'"},
		{"eds:///etc/%00x", "NUL byte"},
	}
	for _, tc := range tests {
		_, err := resolver.ParseTarget(tc.target, "passthrough")
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ParseTarget(%q): %v", tc.target, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ParseTarget(%q) = %v, want an error containing %q", tc.target, err, tc.wantErr)
		}
	}
	// Build checks the target too, for a Target made by hand.
	b, _ := eds.NewBuilder()
	if _, err := b.Build(resolver.Target{Scheme: "eds", Authority: "h", Endpoint: "x"}, &fakeCC{}, resolver.BuildOptions{}); err == nil {
		t.Error("Build accepted an authority")
	}
}

// Every form of the target names the same absolute, cleaned path.
func TestTargetPaths(t *testing.T) {
	var got []string
	b, err := eds.NewBuilder(eds.WithReadFile(func(name string) ([]byte, error) {
		got = append(got, name)
		return nil, fs.ErrNotExist
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"eds:///etc/lb/cla.json", "eds:/etc/lb/cla.json", "eds:///etc/x/../lb//cla.json"} {
		tg, err := resolver.ParseTarget(target, "passthrough")
		if err != nil {
			t.Fatal(err)
		}
		cc := &fakeCC{}
		r, err := b.Build(tg, cc, resolver.BuildOptions{Clock: clock.NewMock()})
		if err != nil {
			t.Fatal(err)
		}
		cc.NextError(t)
		r.Close()
	}
	for _, name := range got {
		if name != "/etc/lb/cla.json" {
			t.Errorf("read %q, want /etc/lb/cla.json", name)
		}
	}
}

func TestOptions(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := eds.NewBuilder(eds.WithPollInterval(d)); err == nil || !strings.Contains(err.Error(), "WithPollInterval") {
			t.Errorf("NewBuilder(WithPollInterval(%v)) error %v, want one naming the option", d, err)
		}
	}
	if _, err := eds.NewBuilder(eds.WithReadFile(nil)); err != nil {
		t.Errorf("WithReadFile(nil): %v", err)
	}
}

func TestPublishesOnBuild(t *testing.T) {
	content := assignment("10.0.0.1", "10.0.0.2")
	cc := &fakeCC{}
	newEnv(t, content, cc)
	checkPublished(t, cc.NextState(t), stateOf(t, content))
}

func TestRereadsAfterPollInterval(t *testing.T) {
	cc := &fakeCC{}
	e := newEnv(t, assignment("10.0.0.1"), cc)
	cc.NextState(t)
	second := assignment("10.0.0.2")
	e.write(t, second)
	e.clk.Add(interval - time.Nanosecond)
	if n := e.reads.count(); n != 1 {
		t.Fatalf("%d reads before the interval passed, want 1", n)
	}
	e.clk.Add(time.Nanosecond)
	e.reads.waitFor(t, 2)
	checkPublished(t, cc.NextState(t), stateOf(t, second))
}

func TestUnchangedFileIsNotPublished(t *testing.T) {
	content := assignment("10.0.0.1")
	cc := &fakeCC{}
	e := newEnv(t, content, cc)
	cc.NextState(t)
	e.write(t, content) // same bytes, new modification time
	e.poll(t)
	e.write(t, strings.ReplaceAll(content, ",", ", ")) // same assignment, other bytes
	e.poll(t)
	// The resolver reports in order from one goroutine: if the reads above
	// had published anything, it would come before this change.
	second := assignment("10.0.0.2")
	e.write(t, second)
	e.poll(t)
	checkPublished(t, cc.NextState(t), stateOf(t, second))
	e.poll(t)
	e.r.Close()
	checkQuiet(t, cc)
}

func TestResolveNowRereads(t *testing.T) {
	cc := &fakeCC{}
	e := newEnv(t, assignment("10.0.0.1"), cc)
	cc.NextState(t)
	second := assignment("10.0.0.2")
	e.write(t, second)
	e.r.ResolveNow()
	checkPublished(t, cc.NextState(t), stateOf(t, second))

	e.r.ResolveNow() // unchanged: read, nothing published
	e.reads.waitFor(t, 3)
	third := assignment("10.0.0.3")
	e.write(t, third)
	e.r.ResolveNow()
	checkPublished(t, cc.NextState(t), stateOf(t, third))
	if n := e.reads.count(); n != 4 {
		t.Errorf("%d reads, want 4", n)
	}
}

func TestInvalidFileKeepsLastGoodState(t *testing.T) {
	cc := &fakeCC{}
	e := newEnv(t, assignment("10.0.0.1"), cc)
	cc.NextState(t)

	// An invalid assignment is reported with its path, once per content.
	e.write(t, strings.Replace(assignment("10.0.0.1"), `"port_value":80`, `"port_value":70000`, 1))
	e.poll(t)
	err := cc.NextError(t)
	var pe *eds.Error
	if !errors.As(err, &pe) || pe.Path != portPath || !strings.Contains(err.Error(), e.file) {
		t.Fatalf("reported %v, want an *eds.Error at %s naming the file", err, portPath)
	}
	e.poll(t) // same invalid content: not reported again

	e.write(t, "{not json")
	e.poll(t)
	if err := cc.NextError(t); !errors.As(err, &pe) || pe.Path != "" {
		t.Fatalf("reported %v, want an *eds.Error without a path", err)
	}

	// A missing file is reported once per error, and again on ResolveNow.
	if err := os.Remove(e.file); err != nil {
		t.Fatal(err)
	}
	e.poll(t)
	if err := cc.NextError(t); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reported %v, want fs.ErrNotExist", err)
	}
	e.poll(t)
	e.r.ResolveNow()
	if err := cc.NextError(t); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reported %v after ResolveNow, want fs.ErrNotExist", err)
	}

	second := assignment("10.0.0.2")
	e.write(t, second)
	e.poll(t)
	checkPublished(t, cc.NextState(t), stateOf(t, second))
	checkQuiet(t, cc)
}

func TestMissingFileAtBuild(t *testing.T) {
	cc := &fakeCC{}
	e := newEnv(t, "", cc)
	if err := cc.NextError(t); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reported %v, want fs.ErrNotExist", err)
	}
	content := assignment("10.0.0.1")
	e.write(t, content)
	e.poll(t)
	checkPublished(t, cc.NextState(t), stateOf(t, content))
}

func TestRejectedStateIsPublishedAgainOnResolveNow(t *testing.T) {
	content := assignment("10.0.0.1")
	want := stateOf(t, content)
	cc := &fakeCC{}
	cc.FailUpdates(errors.New("bad resolver state"))
	e := newEnv(t, content, cc)
	checkPublished(t, cc.NextState(t), want) // rejected
	e.poll(t)                                // unchanged: not retried by polling
	e.r.ResolveNow()
	checkPublished(t, cc.NextState(t), want) // accepted
	e.r.ResolveNow()                         // accepted and unchanged: nothing
	e.reads.waitFor(t, 4)
	second := assignment("10.0.0.2")
	e.write(t, second)
	e.r.ResolveNow()
	checkPublished(t, cc.NextState(t), stateOf(t, second))
}

// The resolver keeps one Namer: swapping two priorities in the file swaps
// their child names instead of minting new ones.
func TestChildNamesFollowLocalitiesAcrossFileChanges(t *testing.T) {
	two := func(first, second string) string {
		return localities(
			`{"locality":{"zone":"`+first+`"},"load_balancing_weight":1,"priority":0,"lb_endpoints":[`+ep("10.0.0."+first, 80)+`]}`,
			`{"locality":{"zone":"`+second+`"},"load_balancing_weight":1,"priority":1,"lb_endpoints":[`+ep("10.0.0."+second, 80)+`]}`)
	}
	cc := &fakeCC{}
	e := newEnv(t, two("1", "2"), cc)
	names := func(st resolver.State) map[string]string { // address → child
		m := make(map[string]string)
		for _, a := range st.Addresses {
			p, _ := hierarchy.Get(a)
			m[a.Addr] = p[0]
		}
		return m
	}
	before := names(cc.NextState(t))
	e.write(t, two("2", "1"))
	e.poll(t)
	after := names(cc.NextState(t))
	if len(before) != 2 || before["10.0.0.1:80"] != after["10.0.0.1:80"] || before["10.0.0.2:80"] != after["10.0.0.2:80"] {
		t.Errorf("child names before the swap %v, after %v; want each address to keep its child", before, after)
	}
}

func TestCloseStopsPolling(t *testing.T) {
	cc := &fakeCC{}
	e := newEnv(t, assignment("10.0.0.1"), cc)
	cc.NextState(t)
	e.r.Close()
	e.r.Close() // idempotent
	e.r.ResolveNow()
	e.write(t, assignment("10.0.0.2"))
	e.clk.Add(10 * interval)
	if n := e.reads.count(); n != 1 {
		t.Errorf("%d reads after Close, want 1", n)
	}
	checkQuiet(t, cc)
}

// Close while a ResolveNow is pending and a timer is armed returns, and
// goleak (TestMain) finds no goroutine left.
func TestCloseRightAfterBuild(t *testing.T) {
	for range 20 {
		cc := &fakeCC{}
		e := newEnv(t, assignment("10.0.0.1"), cc)
		e.r.ResolveNow()
		e.r.Close()
	}
}

// The zero Builder, as registered, polls every DefaultPollInterval.
func TestDefaultPollInterval(t *testing.T) {
	file := t.TempDir() + "/cla.json"
	first, second := assignment("10.0.0.1"), assignment("10.0.0.2")
	if err := os.WriteFile(file, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, err := resolver.ParseTarget("eds://"+file, "passthrough")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewMock()
	cc := &fakeCC{}
	r, err := resolver.Get(eds.Scheme).Build(tg, cc, resolver.BuildOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkPublished(t, cc.NextState(t), stateOf(t, first))
	if err := os.WriteFile(file, []byte(second), 0o600); err != nil {
		t.Fatal(err)
	}
	clk.Add(eds.DefaultPollInterval)
	checkPublished(t, cc.NextState(t), stateOf(t, second))
}

// A locality left out is logged at WARN once per distinct content: an
// unchanged file costs a read and a hash, not a parse, so it logs nothing
// again. An empty tree is published with its reason (State.Degraded), in
// the same update, once; no separate ReportError follows.
func TestDroppedLocalitiesWarnOncePerContent(t *testing.T) {
	w := &lbtest.Logs{}
	cc := &fakeCC{}
	partial := `{"cluster_name":"c","endpoints":[{"locality":{"zone":"a"},"lb_endpoints":[` + ep("10.0.0.1", 80) + `]},{"load_balancing_weight":1,"locality":{"zone":"b"},"lb_endpoints":[` + ep("10.0.0.2", 80) + `]}]}`
	e := newEnvLogging(t, partial, cc, slog.New(w))
	checkPublished(t, cc.NextState(t), stateOf(t, partial))
	const leftOut = "left out of the tree"
	if n := w.Count(slog.LevelWarn, leftOut); n != 1 {
		t.Fatalf("%d warnings about left-out localities, want 1", n)
	}
	e.poll(t)
	e.poll(t)
	empty := `{"cluster_name":"c","endpoints":[{"locality":{"zone":"a"},"lb_endpoints":[` + ep("10.0.0.1", 80) + `]}]}`
	e.write(t, empty)
	e.poll(t)
	err := cc.NextState(t).Degraded
	if want := `priority 0 has no locality with a load_balancing_weight and an endpoint UNKNOWN or HEALTHY (endpoints[0] (locality "/a/", priority 0): no load_balancing_weight)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("published the empty state with reason %v, want the reason %s", err, want)
	}
	e.poll(t)
	e.r.Close()
	checkQuiet(t, cc)
	if n := w.Count(slog.LevelWarn, leftOut); n != 2 {
		t.Fatalf("%d warnings about left-out localities after two distinct contents, want 2", n)
	}
}
