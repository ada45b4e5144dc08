package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
)

// palette colours the policies, in order.
var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// dashes tell apart policies whose lines coincide (round_robin and
// weighted_round_robin over equal weights).
var dashes = []string{"none", "8,4", "2,3", "10,3,2,3"}

// SVG geometry.
const (
	svgWidth   = 960
	plotLeft   = 90
	plotRight  = 230 // room for the legend
	cdfTop     = 60
	cdfHeight  = 320
	heatHeight = 160
	heatGap    = 60
	maxRows    = 100 // backends beyond this share heat-map rows
)

// WriteSVG draws rep: the latency distribution of every policy on one
// chart (log latency across, percentile up, to 99.99% and the maximum),
// then, per policy, a heat map of each backend's load over time: the most
// requests it held at once (served or queued) in each second, one row per
// backend, darker is more, on one colour scale (square root) for all
// policies.
func WriteSVG(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	height := cdfTop + cdfHeight + 70 + len(rep.Policies)*(heatHeight+heatGap) + 20
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%d" y="24" font-size="16" font-weight="bold">%s: latency of every request (failures at their timeout)</text>`+"\n",
		plotLeft, html.EscapeString(rep.Scenario))
	drawCDF(bw, rep)
	top := cdfTop + cdfHeight + 70
	scale, secs := maxCell(rep), 1
	for _, p := range rep.Policies {
		secs = max(secs, len(p.Series))
	}
	for i := range rep.Policies {
		drawHeat(bw, &rep.Policies[i], i, top, scale, secs)
		top += heatHeight + heatGap
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// drawCDF draws the latency distributions.
func drawCDF(w io.Writer, rep *Report) {
	lo, hi := math.Inf(1), 0.0
	for _, p := range rep.Policies {
		for _, c := range p.CDF {
			if c.Ms > 0 {
				lo = min(lo, c.Ms)
			}
			hi = max(hi, c.Ms)
		}
	}
	if hi <= 0 {
		return
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	width := float64(svgWidth - plotLeft - plotRight)
	x := func(ms float64) float64 {
		return plotLeft + width*(math.Log10(max(ms, lo))-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
	}
	const yMax = 4.5 // -log10(1-q) of the top row: the maximum
	y := func(q float64) float64 {
		v := yMax
		if q < 1 {
			v = min(-math.Log10(1-q), 4)
		}
		return cdfTop + cdfHeight - cdfHeight*v/yMax
	}
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%s" height="%d" fill="none" stroke="#999"/>`+"\n", plotLeft, cdfTop, f1(width), cdfHeight)
	for _, t := range []struct {
		q     float64
		label string
	}{{0, "0%"}, {0.9, "90%"}, {0.99, "99%"}, {0.999, "99.9%"}, {0.9999, "99.99%"}, {1, "max"}} {
		fmt.Fprintf(w, `<line x1="%d" x2="%s" y1="%s" y2="%s" stroke="#eee"/><text x="%d" y="%s" text-anchor="end">%s</text>`+"\n",
			plotLeft, f1(plotLeft+width), f1(y(t.q)), f1(y(t.q)), plotLeft-6, f1(y(t.q)+4), t.label)
	}
	for d := lo; d <= hi*1.001; d *= 10 {
		fmt.Fprintf(w, `<line x1="%s" x2="%s" y1="%d" y2="%d" stroke="#eee"/><text x="%s" y="%d" text-anchor="middle">%s ms</text>`+"\n",
			f1(x(d)), f1(x(d)), cdfTop, cdfTop+cdfHeight, f1(x(d)), cdfTop+cdfHeight+16, strconv.FormatFloat(d, 'g', -1, 64))
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle">latency (log scale)</text>`+"\n", plotLeft+int(width/2), cdfTop+cdfHeight+34)
	for i, p := range rep.Policies {
		color := palette[i%len(palette)]
		dash := dashes[i%len(dashes)]
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="`, color, dash)
		for _, c := range p.CDF {
			fmt.Fprintf(w, "%s,%s ", f1(x(c.Ms)), f1(y(c.Q)))
		}
		fmt.Fprintln(w, `"/>`)
		ly := cdfTop + 10 + i*48
		lx := svgWidth - plotRight + 14
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3" stroke-dasharray="%s"/><text x="%d" y="%d" font-weight="bold">%s</text>`+"\n",
			lx, ly+2, lx+16, ly+2, color, dash, lx+20, ly+6, html.EscapeString(shorten(p.Policy, 26)))
		fmt.Fprintf(w, `<text x="%d" y="%d">success %s%%, p99 %s ms</text>`+"\n",
			lx+20, ly+22, strconv.FormatFloat(100*p.SuccessRate, 'f', 2, 64), f1(p.Latency.P99))
	}
}

// shorten cuts s to n runes, ending it with an ellipsis when it was cut
// (the heat maps' titles carry the whole name).
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// maxCell returns the most requests any heat-map row received in one
// second, over every policy: the top of the shared colour scale.
func maxCell(rep *Report) float64 {
	top := 1.0
	for _, p := range rep.Policies {
		for _, s := range p.Series {
			for _, row := range heatRows(s.PeakInFlight) {
				top = max(top, row)
			}
		}
	}
	return top
}

// heatRows folds per-backend counts into at most maxRows rows, each the
// mean of its backends.
func heatRows(counts []int) []float64 {
	n := len(counts)
	rows := min(n, maxRows)
	out := make([]float64, rows)
	for r := range rows {
		from, to := r*n/rows, (r+1)*n/rows
		sum := 0.0
		for _, c := range counts[from:to] {
			sum += float64(c)
		}
		out[r] = sum / float64(to-from)
	}
	return out
}

// drawHeat draws one policy's load per backend over time, secs seconds
// across (the longest policy's run, so that every map has one time axis).
func drawHeat(w io.Writer, p *PolicyResult, i, top int, scale float64, secs int) {
	width := float64(svgWidth - plotLeft - plotRight)
	fmt.Fprintf(w, `<text x="%d" y="%d" font-weight="bold" fill="%s">%s: requests in flight at each backend (peak of each second)</text>`+"\n",
		plotLeft, top-8, palette[i%len(palette)], html.EscapeString(p.Policy))
	if len(p.Series) == 0 || len(p.Backends) == 0 {
		return
	}
	cw := width / float64(secs)
	nrows := min(len(p.Backends), maxRows)
	rh := float64(heatHeight) / float64(nrows)
	for t, s := range p.Series {
		for r, v := range heatRows(s.PeakInFlight) {
			if v == 0 {
				continue
			}
			shade := 255 - int(math.Round(215*math.Sqrt(v/scale)))
			fmt.Fprintf(w, `<rect x="%s" y="%s" width="%s" height="%s" fill="rgb(%d,%d,255)"/>`+"\n",
				f1(plotLeft+float64(t)*cw), f1(float64(top)+float64(r)*rh), f1(cw+0.3), f1(rh+0.3), shade, shade)
		}
	}
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%s" height="%d" fill="none" stroke="#999"/>`+"\n", plotLeft, top, f1(width), heatHeight)
	for r := range nrows {
		if nrows <= 20 || r%(nrows/10) == 0 {
			name := p.Backends[r*len(p.Backends)/nrows].Name
			fmt.Fprintf(w, `<text x="%d" y="%s" text-anchor="end" font-size="10">%s</text>`+"\n",
				plotLeft-6, f1(float64(top)+(float64(r)+0.75)*rh), html.EscapeString(name))
		}
	}
	step := max(1, secs/12)
	for t := 0; t < secs; t += step {
		fmt.Fprintf(w, `<text x="%s" y="%d" text-anchor="middle" font-size="10">%ds</text>`+"\n",
			f1(plotLeft+(float64(t)+0.5)*cw), top+heatHeight+14, t)
	}
	lx := svgWidth - plotRight + 14
	fmt.Fprintf(w, `<text x="%d" y="%d">max/avg load %s</text>`+"\n", lx, top+14, strconv.FormatFloat(p.Load.MaxOverAvg, 'f', 3, 64))
	for k, v := range []float64{scale, scale / 4, scale / 16, 0} {
		shade := 255 - int(math.Round(215*math.Sqrt(v/scale)))
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="14" height="14" fill="rgb(%d,%d,255)" stroke="#999"/><text x="%d" y="%d">%s in flight</text>`+"\n",
			lx, top+26+k*20, shade, shade, lx+20, top+38+k*20, f1(v))
	}
}
