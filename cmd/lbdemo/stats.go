package main

import (
	"github.com/lbkit/lbkit/adapters/nethttp"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// recorder counts, per second, the requests each backend address served
// and the requests that failed. It wraps the nethttp.Transport, and learns
// the address the channel picked from each response (nethttp.BackendOf).
type recorder struct {
	base http.RoundTripper

	mu      sync.Mutex
	current map[string]int
	errors  int
	watches []*watch
	sc      *scenario
}

// watch times the first request served by a priority after a script step.
type watch struct {
	label    string
	since    time.Time
	priority string
	got      time.Duration // guarded by recorder.mu
	seen     bool
}

// result returns how long after the step the priority first served.
func (w *watch) result() (time.Duration, bool) { return w.got, w.seen }

// watch starts timing w.
func (r *recorder) watch(w *watch, sc *scenario) {
	r.mu.Lock()
	r.watches = append(r.watches, w)
	r.sc = sc
	r.mu.Unlock()
}

func newRecorder(base http.RoundTripper) *recorder {
	return &recorder{base: base, current: map[string]int{}}
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err == nil && resp.StatusCode >= 500 {
		r.failed()
	}
	backend, picked := nethttp.BackendOf(resp)
	if err == nil && resp.StatusCode == http.StatusOK && picked {
		now := time.Now()
		r.mu.Lock()
		r.current[backend.Addr]++
		for _, w := range r.watches {
			if !w.seen && r.sc.priorityOf[r.sc.nameOf[backend.Addr]] == w.priority {
				w.seen, w.got = true, now.Sub(w.since)
			}
		}
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recorder) failed() {
	r.mu.Lock()
	r.errors++
	r.mu.Unlock()
}

// take returns the counts since the last take and starts new ones.
func (r *recorder) take() (map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts, errs := r.current, r.errors
	r.current, r.errors = map[string]int{}, 0
	return counts, errs
}

// second is one row of the timeline.
type second struct {
	At       time.Duration
	Counts   map[string]int // by backend name
	Errors   int
	State    lb.ConnectivityState
	Priority string // the priority that served most requests, "-" if none
	Event    string // what the script did during this second, if anything
	// Disturbed is set when a backend was failing or ejected during the
	// second.
	Disturbed bool
}

// timeline is every second of a run plus what the script did when.
type timeline struct {
	Backends []string // column order
	Seconds  []second
}

// dominantPriority returns the priority whose backends served most of
// counts, or "-".
func dominantPriority(counts map[string]int, priorityOf map[string]string) string {
	perPriority := map[string]int{}
	for name, n := range counts {
		perPriority[priorityOf[name]] += n
	}
	best, bestN := "-", 0
	for _, p := range slices.Sorted(maps.Keys(perPriority)) {
		if perPriority[p] > bestN {
			best, bestN = p, perPriority[p]
		}
	}
	return best
}
