package demo

import (
	"testing"
	"time"
)

// feed shows backends to w, one request a millisecond after the step,
// and returns what it found.
func feed(w *Watch, backends ...string) WatchResult {
	start := time.Unix(0, 0)
	w.start(start)
	for i, b := range backends {
		w.observe(b, start.Add(time.Duration(i+1)*time.Millisecond))
	}
	return w.result()
}

func TestFirstRequestToTimesTheFirstMatch(t *testing.T) {
	w := &Watch{Name: "n", Until: FirstRequestTo("c", "d"), Report: "after %v", Missing: "never"}
	if got := feed(w, "a", "b", "d", "c"); !got.Seen || got.After != 3*time.Millisecond || got.Line != "after 3ms" {
		t.Fatalf("got %+v, want seen after 3ms", got)
	}
	w = &Watch{Until: FirstRequestTo("c"), Report: "after %v", Missing: "never"}
	if got := feed(w, "a", "b"); got.Seen || got.Line != "never" {
		t.Fatalf("got %+v, want not seen, line %q", got, "never")
	}
}

func TestLastRequestToTimesTheLastMatch(t *testing.T) {
	w := &Watch{Until: LastRequestTo("b"), Report: "%v"}
	if got := feed(w, "b", "a", "b", "a", "a"); !got.Seen || got.After != 3*time.Millisecond {
		t.Fatalf("got %+v, want the last request to b, after 3ms", got)
	}
}

// The share counts only the latest window requests after the step, and
// is met within the tolerance.
func TestShareReachesCountsTheLatestWindow(t *testing.T) {
	w := &Watch{Until: ShareReaches([]string{"b"}, 0.75, 0.01, 4), Report: "%v"}
	// Shares of b over the latest 4: (after 4) 1/4, 2/4, 3/4 at the 6th,
	// whose window began with the 3rd.
	if got := feed(w, "a", "a", "a", "b", "b", "b", "b"); !got.Seen || got.After != 3*time.Millisecond {
		t.Fatalf("got %+v, want met from the 3rd request", got)
	}
	w = &Watch{Until: ShareReaches([]string{"b"}, 0.5, 0.01, 4), Report: "%v"}
	if got := feed(w, "b", "b", "b"); got.Seen {
		t.Fatalf("got %+v, want not met before the window is full", got)
	}
}

// Each topology gets its own shares, over its steady seconds only.
func TestSummarizeGivesEachPhaseItsShares(t *testing.T) {
	sc := &Scenario{Backends: []string{"a", "b", "c"}}
	one := Topology{PriorityOf: map[string]string{"a": "p0", "b": "p0", "c": "p1"}, Want: map[string]float64{"a": 0.5, "b": 0.5}}
	two := Topology{PriorityOf: map[string]string{"a": "p0", "b": "p0", "c": "p1"}, Want: map[string]float64{"a": 0.2, "b": 0.8}}
	phases := []phase{{topology: one}, {label: "shift", topology: two}}
	tl := &timeline{Backends: sc.Backends, Seconds: []second{
		{Counts: map[string]int{"a": 99, "b": 1}},                   // first second: left out
		{Counts: map[string]int{"a": 50, "b": 50}},                  // steady, phase 0
		{Counts: map[string]int{"a": 40, "b": 60}, Disturbed: true}, // disturbed: left out
		{Counts: map[string]int{"a": 30, "b": 70}},                  // after a disturbed second: left out
		{Counts: map[string]int{"a": 50, "b": 50}},                  // steady, phase 0
		{Counts: map[string]int{"a": 40, "b": 60}, Event: "shift", Phase: 1},
		{Counts: map[string]int{"a": 21, "b": 79}, Phase: 1}, // after an event: left out
		{Counts: map[string]int{"a": 22, "b": 78}, Phase: 1},
		{Counts: map[string]int{"a": 20, "b": 70, "c": 10}, Phase: 1}, // p1 served: left out
	}}
	sum := sc.summarize(tl, phases)
	if sum.Requests != 900 {
		t.Errorf("requests %d, want 900", sum.Requests)
	}
	if len(sum.Phases) != 2 {
		t.Fatalf("phases %+v, want 2", sum.Phases)
	}
	p0, p1 := sum.Phases[0], sum.Phases[1]
	if p0.Label != "" || p0.MaxShareError != 0 || p0.Shares[0].Got != 0.5 {
		t.Errorf("phase 0: %+v, want a and b at 50%%", p0)
	}
	if p1.Label != "shift" || p1.Shares[0].Got != 0.22 || p1.Shares[1].Want != 0.8 {
		t.Errorf("phase 1: %+v, want a at 22%% of its steady second", p1)
	}
}
