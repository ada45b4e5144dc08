package demo

import (
	"regexp"
	"strings"
	"testing"
)

// Labels of nearby events take separate lines; a label that would run
// past the limit ends at its event; a line is reused once clear.
func TestLabelLinesKeepLabelsApart(t *testing.T) {
	var l labelLines
	label := "0123456789" // 65 px wide
	for _, tc := range []struct {
		x      float64
		lx     float64
		anchor string
		line   int
	}{
		{x: 100, lx: 104, anchor: "start", line: 0},
		{x: 120, lx: 124, anchor: "start", line: 1},
		{x: 200, lx: 204, anchor: "start", line: 0}, // line 0 ended at 169
		{x: 480, lx: 476, anchor: "end", line: 0},   // would end past 500
	} {
		lx, anchor, line := l.place(tc.x, label, 0, 500)
		if lx != tc.lx || anchor != tc.anchor || line != tc.line {
			t.Errorf("place(%v) = %v, %s, line %d; want %v, %s, line %d", tc.x, lx, anchor, line, tc.lx, tc.anchor, tc.line)
		}
	}
}

// A label too long to end at its event without running off the left
// edge starts at the edge instead (issue 28: it was clipped).
func TestLabelIsNeverClipped(t *testing.T) {
	var l labelLines
	label := strings.Repeat("0123456789", 4) // 260 px wide
	if lx, anchor, _ := l.place(150, label, 60, 300); lx != 60 || anchor != "start" {
		t.Errorf("place(150) in [60, 300] = %v, %s; want 60, start", lx, anchor)
	}
	if lx, anchor, _ := l.place(100, label, 60, 1000); lx != 104 || anchor != "start" {
		t.Errorf("place(100) in [60, 1000] = %v, %s; want 104, start", lx, anchor)
	}
}

// Two backends with equal counts (two backups of one weight) stay
// distinguishable: neighbouring columns' lines have different dash
// patterns, and the legend shows each line's pattern (issue 28: one line
// hid the other).
func TestEqualLinesStayDistinguishable(t *testing.T) {
	tl := &timeline{Backends: []string{"a", "b", "c", "d", "e"}, Seconds: []second{
		{Counts: map[string]int{"a": 50, "b": 50, "c": 50, "d": 50, "e": 50}},
		{Counts: map[string]int{"a": 50, "b": 50, "c": 50, "d": 50, "e": 50}, Event: "x"},
	}}
	var out strings.Builder
	if err := writeSVG(&out, tl); err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`<polyline [^>]*stroke-dasharray="([^"]*)"`)
	var got []string
	for _, m := range pattern.FindAllStringSubmatch(out.String(), -1) {
		got = append(got, m[1])
	}
	if len(got) != len(tl.Backends) {
		t.Fatalf("%d polylines with a dash pattern, want %d:\n%s", len(got), len(tl.Backends), out.String())
	}
	for k := 1; k < len(got); k++ {
		if got[k] == got[k-1] {
			t.Errorf("columns %d and %d share the dash pattern %q", k-1, k, got[k])
		}
		legend := `stroke-width="3" stroke-dasharray="` + got[k] + `"`
		if !strings.Contains(out.String(), legend) {
			t.Errorf("the legend does not show column %d's pattern %q", k, got[k])
		}
	}
}
