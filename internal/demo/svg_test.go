package demo

import "testing"

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
		lx, anchor, line := l.place(tc.x, label, 500)
		if lx != tc.lx || anchor != tc.anchor || line != tc.line {
			t.Errorf("place(%v) = %v, %s, line %d; want %v, %s, line %d", tc.x, lx, anchor, line, tc.lx, tc.anchor, tc.line)
		}
	}
}
