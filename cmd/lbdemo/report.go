package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

func (sc *scenario) columnWidth(name string) int { return max(len(name), 6) }

func (sc *scenario) printHeader(out io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "%5s", "t")
	for _, name := range sc.names {
		fmt.Fprintf(&b, " %*s", sc.columnWidth(name), name)
	}
	fmt.Fprintf(&b, " %6s  %-17s %-8s", "errors", "channel", "priority")
	fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
}

func (sc *scenario) printRow(out io.Writer, tl *timeline, s second) {
	var b strings.Builder
	fmt.Fprintf(&b, "%4ds", int(s.At.Seconds()))
	if len(sc.names) > 0 {
		for _, name := range sc.names {
			fmt.Fprintf(&b, " %*d", sc.columnWidth(name), s.Counts[name])
		}
	} else {
		for _, name := range sc.discovered(&timeline{Seconds: []second{s}}) {
			fmt.Fprintf(&b, " %s=%d", name, s.Counts[name])
		}
	}
	fmt.Fprintf(&b, " %6d  %-17v %-8s", s.Errors, s.State, s.Priority)
	if s.Event != "" {
		fmt.Fprintf(&b, " <- %s", s.Event)
	}
	fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
}

func printSummary(out io.Writer, s *summary) {
	fmt.Fprintf(out, "\nsummary: %d requests served, %d failed\n", s.Requests, s.Errors)
	if len(s.Shares) > 0 {
		fmt.Fprintln(out, "priority 0 shares in steady state (locality weight share × endpoint weight share):")
		for _, sh := range s.Shares {
			fmt.Fprintf(out, "  %-22s want %5.1f%%  got %5.1f%%\n", sh.Backend, 100*sh.Want, 100*sh.Got)
		}
		fmt.Fprintf(out, "  largest difference: %.2f percentage points\n", s.MaxShareError)
	}
	if s.FailedOver {
		fmt.Fprintf(out, "failover: backup served %v after the primary stopped\n", s.FailoverAfter.Round(millisecond))
	}
	if s.Returned {
		fmt.Fprintf(out, "return: primary served again %v after it restarted\n", s.ReturnAfter.Round(millisecond))
	}
	if o := s.Outlier; o.Backend != "" {
		switch {
		case !o.Ejected:
			fmt.Fprintf(out, "outlier detection: %s answered 503 but was not ejected\n", o.Backend)
		case o.Back:
			fmt.Fprintf(out, "outlier detection: %s ejected %v after it began answering 503, back in service %v later\n",
				o.Backend, o.EjectedAfter.Round(millisecond), o.OutFor.Round(millisecond))
		default:
			fmt.Fprintf(out, "outlier detection: %s ejected %v after it began answering 503, not back by the end\n",
				o.Backend, o.EjectedAfter.Round(millisecond))
		}
	}
	fmt.Fprintf(out, "timeline: %s\n", s.SVGPath)
}

const millisecond = time.Millisecond
