package demo

import (
	"fmt"
	"slices"
	"time"
)

// Watch times how long after its step the traffic reflected the step. It
// sees the requests served from its step until the next one. A Watch
// belongs to one step of one run.
type Watch struct {
	// Name identifies the watch in [Summary.Watch].
	Name string
	// Until is what the requests served after the step must show.
	Until Condition
	// Report is the summary's line when the condition was met, with one
	// %v for the time since the step.
	Report string
	// Missing is the summary's line when it was never met; "" prints
	// nothing.
	Missing string

	// Guarded by the recorder's lock once the step started it.
	since time.Time
	seen  bool
	got   time.Duration
}

// Condition is what a [Watch] waits for in the requests served after its
// step. A Condition serves one Watch: it may keep state.
type Condition struct {
	// met is called with the backend of each request served after the
	// step, in the order they completed, and the time it completed; it
	// reports whether the requests so far show the step took effect, and
	// from when.
	met func(backend string, at time.Time) (from time.Time, ok bool)
	// last times the last request that met the condition instead of the
	// first.
	last bool
}

// FirstRequestTo is met by the first request served by one of names.
func FirstRequestTo(names ...string) Condition {
	return Condition{met: func(b string, at time.Time) (time.Time, bool) { return at, slices.Contains(names, b) }}
}

// LastRequestTo times the last request served by one of names: how long
// the backends kept serving after the step (a drain).
func LastRequestTo(names ...string) Condition {
	return Condition{met: func(b string, at time.Time) (time.Time, bool) { return at, slices.Contains(names, b) }, last: true}
}

// ShareReaches is met by the first run of window requests in a row, after
// the step, of which names served a share within tolerance of want
// (fractions of 1); it times the run's first request, from which on the
// traffic followed the step.
func ShareReaches(names []string, want, tolerance float64, window int) Condition {
	in := make([]bool, window)         // whether the request was to names
	times := make([]time.Time, window) // when it completed
	n, count := 0, 0                   // requests seen, and how many of the latest window were to names
	return Condition{met: func(b string, at time.Time) (time.Time, bool) {
		i := n % window
		if n >= window && in[i] {
			count--
		}
		in[i], times[i] = slices.Contains(names, b), at
		if in[i] {
			count++
		}
		n++
		share := float64(count) / float64(window)
		if n < window || share < want-tolerance || share > want+tolerance {
			return time.Time{}, false
		}
		return times[n%window], true // the oldest of the window
	}}
}

// start begins timing at now.
func (w *Watch) start(now time.Time) { w.since = now }

// observe sees one request served at now by backend.
func (w *Watch) observe(backend string, now time.Time) {
	if w.seen && !w.Until.last {
		return
	}
	if from, ok := w.Until.met(backend, now); ok {
		w.seen, w.got = true, from.Sub(w.since)
	}
}

// WatchResult is what one [Watch] found.
type WatchResult struct {
	Name string
	// Seen reports whether the condition was met; After is how long after
	// the step.
	Seen  bool
	After time.Duration
	// Line is the summary's line: the watch's Report or Missing.
	Line string
}

// result returns what w found.
func (w *Watch) result() WatchResult {
	r := WatchResult{Name: w.Name, Seen: w.seen, After: w.got, Line: w.Missing}
	if w.seen {
		r.Line = fmt.Sprintf(w.Report, w.got.Round(millisecond))
	}
	return r
}
