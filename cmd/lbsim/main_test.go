package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// read returns the repository's file at path (from its root).
func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// scenario returns the simulator's every-field test scenario (name "all").
func scenario(t *testing.T) string { return read(t, "sim/testdata/scenarios/all-fields.json") }

// docs/simulation.md shows the table of sim/results/results.md, which make
// sim writes from the shipped scenarios and then checks with this test: the
// figures the docs publish are the code's.
func TestDocsShowTheResultsTable(t *testing.T) {
	if table := read(t, "sim/results/results.md"); !strings.Contains(read(t, "docs/simulation.md"), table) {
		t.Errorf("docs/simulation.md does not show sim/results/results.md (make sim writes it):\n%s", table)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunWritesReportChartAndTable(t *testing.T) {
	in := writeFile(t, "all.json", scenario(t))
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "-out", out, in}, &stdout, &stderr); code != 0 {
		t.Fatalf("status %d: %s", code, stderr.String())
	}
	for _, f := range []string{"all.json", "all.svg"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(stdout.String(), "| all | od | ") {
		t.Errorf("table:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"run", in}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"scenario": "all"`) {
		t.Errorf("without -out: status %d, output %.200s", code, stdout.String())
	}
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	bad := writeFile(t, "bad.json", strings.Replace(scenario(t), `"seed": 9`, `"seed": -1`, 1))
	for _, args := range [][]string{nil, {"walk"}, {"run"}, {"run", "-nope", bad}, {"run", bad}, {"run", "/no/such/file.json"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: status %d, want 2 (%s)", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	run([]string{"run", bad}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "seed: must be from 0") {
		t.Errorf("stderr %q does not name the path", stderr.String())
	}
}
