package demo

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// palette colours the backends' lines, in column order.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// dashes are the backends' line patterns, in column order: neighbouring
// columns (often equal weights, as two backups) differ, so that a line
// drawn over an equal one leaves it visible through its gaps.
var dashes = []string{"none", "7 4", "2 3", "10 3 2 3"}

// writeSVG draws requests per backend per second, with the script's events
// as dashed vertical lines and the priority in use as a band along the top.
func writeSVG(w io.Writer, t *timeline) error {
	const (
		width, height = 960, 420
		left, right   = 60, 200
		top, bottom   = 40, 40
	)
	plotW, plotH := float64(width-left-right), float64(height-top-bottom)
	n := len(t.Seconds)
	maxY := 1
	for _, s := range t.Seconds {
		for _, c := range s.Counts {
			maxY = max(maxY, c)
		}
	}
	x := func(i int) float64 { return left + plotW*float64(i)/math.Max(1, float64(n-1)) }
	y := func(v int) float64 { return top + plotH - plotH*float64(v)/float64(maxY) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">lbkit demo: requests per backend per second</text>`+"\n", left)
	// Axes.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, height-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, height-bottom, width-right, height-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%d</text>`+"\n", left-6, top+4, maxY)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">0</text>`+"\n", left-6, height-bottom+4)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">seconds</text>`+"\n", left+int(plotW/2), height-8)
	fmt.Fprintf(&b, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">requests/s</text>`+"\n", top+int(plotH/2), top+int(plotH/2))
	var labels labelLines
	for i, s := range t.Seconds {
		if i%5 == 0 || i == n-1 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(i), height-bottom+16, int(s.At.Seconds()))
		}
		// Priority band.
		colour := map[string]string{"p0": "#c6e5c6", "p1": "#f5d3b3"}[s.Priority]
		if colour == "" {
			colour = "#eeeeee"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="8" fill="%s"><title>%s</title></rect>`+"\n",
			x(i)-plotW/float64(2*max(1, n-1)), top-14, plotW/float64(max(1, n-1)), colour, s.Priority)
		if s.Event != "" {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555" stroke-dasharray="4 3"/>`+"\n", x(i), top, x(i), height-bottom)
			// One line per event of the second, each placed on its own.
			for _, part := range strings.Split(s.Event, "; ") {
				lx, anchor, line := labels.place(x(i), part, left, width-right)
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#555" stroke="white" stroke-width="3" paint-order="stroke" text-anchor="%s">%s</text>`+"\n", lx, top+14+14*line, anchor, escape(part))
			}
		}
	}
	for k, name := range t.Backends {
		colour := palette[k%len(palette)]
		var pts []string
		for i, s := range t.Seconds {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(s.Counts[name])))
		}
		dash := dashes[k%len(dashes)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"/>`+"\n", colour, dash, strings.Join(pts, " "))
		ly := top + 10 + 18*k
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3" stroke-dasharray="%s"/>`+"\n", width-right+12, ly, width-right+32, ly, colour, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", width-right+38, ly+4, escape(name))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">top band: priority in use</text>`+"\n", width-right+12, top+20+18*len(t.Backends))
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">(green p0, orange p1)</text>`+"\n", width-right+12, top+36+18*len(t.Backends))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// labelLines places the events' labels on lines under the top of the
// plot so that they do not overlap, estimating each label's width from
// its length.
type labelLines struct {
	ends []float64 // per line, where its last label ends
}

// maxLabelLines bounds the lines; past them a label goes on the line that
// ends first.
const maxLabelLines = 8

// place returns where the label of an event at x goes: the text's x, its
// anchor, and its line. A label that would run past limit ends at x; one
// that would then start before lo starts at lo (or ends at limit, if
// that is further left), so that no label is clipped at either side.
func (l *labelLines) place(x float64, label string, lo, limit int) (lx float64, anchor string, line int) {
	w := 6.5 * float64(len(label))
	lx, anchor = x+4, "start"
	from, to := lx, lx+w
	if to > float64(limit) {
		lx, anchor = x-4, "end"
		from, to = lx-w, lx
	}
	if from < float64(lo) {
		lx, anchor = max(float64(lo), math.Min(x+4, float64(limit)-w)), "start"
		from, to = lx, lx+w
	}
	line = -1
	for k, end := range l.ends {
		if end+8 < from {
			line = k
			break
		}
	}
	switch {
	case line >= 0:
	case len(l.ends) < maxLabelLines:
		line = len(l.ends)
		l.ends = append(l.ends, 0)
	default:
		line = 0
		for k, end := range l.ends {
			if end < l.ends[line] {
				line = k
			}
		}
	}
	l.ends[line] = to
	return lx, anchor, line
}
