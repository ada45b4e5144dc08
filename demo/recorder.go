package demo

import (
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/lb"
)

// recorder counts, per second, the requests each backend served and the
// requests that failed, and shows each served request to the watches
// running. It wraps the nethttp.Transport, and learns the address the
// channel picked from each response (nethttp.BackendOf). Its methods are
// safe for concurrent use.
type recorder struct {
	base   http.RoundTripper
	nameOf func(addr string) string // read-only

	mu      sync.Mutex
	current map[string]int // by backend name
	errors  int
	watches []*Watch // every watch started, in order
	active  []*Watch // the latest step's
}

func newRecorder(base http.RoundTripper, nameOf func(string) string) *recorder {
	return &recorder{base: base, nameOf: nameOf, current: map[string]int{}}
}

// step ends the watches of the previous step and starts ws at now.
func (r *recorder) step(ws []*Watch, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range ws {
		w.start(now)
	}
	r.watches = append(r.watches, ws...)
	r.active = ws
}

// RoundTrip sends req through the channel and counts the outcome: a
// 200 for the backend picked, a 5xx or an error as a failure.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err == nil && resp.StatusCode >= 500 {
		r.failed()
	}
	backend, picked := nethttp.BackendOf(resp)
	if err == nil && resp.StatusCode == http.StatusOK && picked {
		now := time.Now()
		name := r.nameOf(backend.Addr)
		r.mu.Lock()
		r.current[name]++
		for _, w := range r.active {
			w.observe(name, now)
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

// results returns what the watches found, in the order they started.
func (r *recorder) results() []WatchResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]WatchResult, 0, len(r.watches))
	for _, w := range r.watches {
		out = append(out, w.result())
	}
	return out
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
	// Phase indexes the topology in force at the end of the second.
	Phase int
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
