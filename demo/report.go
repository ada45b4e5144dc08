package demo

import (
	"fmt"
	"io"
	"strings"
	"time"
)

func columnWidth(name string) int { return max(len(name), 6) }

func (s *Scenario) printHeader(out io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "%5s", "t")
	for _, name := range s.Backends {
		fmt.Fprintf(&b, " %*s", columnWidth(name), name)
	}
	fmt.Fprintf(&b, " %6s  %-17s %-8s", "errors", "channel", "priority")
	fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
}

func (s *Scenario) printRow(out io.Writer, sec second) {
	var b strings.Builder
	fmt.Fprintf(&b, "%4ds", int(sec.At.Seconds()))
	if len(s.Backends) > 0 {
		for _, name := range s.Backends {
			fmt.Fprintf(&b, " %*d", columnWidth(name), sec.Counts[name])
		}
	} else {
		for _, name := range discovered(&timeline{Seconds: []second{sec}}) {
			fmt.Fprintf(&b, " %s=%d", name, sec.Counts[name])
		}
	}
	fmt.Fprintf(&b, " %6d  %-17v %-8s", sec.Errors, sec.State, sec.Priority)
	if sec.Event != "" {
		fmt.Fprintf(&b, " <- %s", sec.Event)
	}
	fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
}

func printSummary(out io.Writer, s *Summary) {
	fmt.Fprintf(out, "\nsummary: %d requests served, %d failed\n", s.Requests, s.Errors)
	for _, p := range s.Phases {
		if p.Label == "" {
			fmt.Fprintln(out, "priority 0 shares in steady state (locality weight share × endpoint weight share):")
		} else {
			fmt.Fprintf(out, "priority 0 shares in steady state after %s:\n", p.Label)
		}
		for _, sh := range p.Shares {
			fmt.Fprintf(out, "  %-22s want %5.1f%%  got %5.1f%%\n", sh.Backend, 100*sh.Want, 100*sh.Got)
		}
		fmt.Fprintf(out, "  largest difference: %.2f percentage points\n", p.MaxShareError)
	}
	for _, w := range s.Watches {
		if w.Line != "" {
			fmt.Fprintln(out, w.Line)
		}
	}
	for _, n := range s.Notes {
		fmt.Fprintln(out, n)
	}
	if s.Late > lateNotice {
		fmt.Fprintf(out, "script: a step ran %v late (the machine was busy); the times above may be off\n", s.Late.Round(millisecond))
	}
	fmt.Fprintf(out, "timeline: %s\n", s.SVGPath)
}

// lateNotice is how late a step may run before the summary says so.
const lateNotice = 100 * time.Millisecond

// millisecond is the precision of the durations a summary prints.
const millisecond = time.Millisecond
