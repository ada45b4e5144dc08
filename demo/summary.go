package demo

import (
	"math"
	"time"
)

// Summary is what a run found.
type Summary struct {
	Requests, Errors int
	// Phases gives, for each topology that had seconds in steady state,
	// the shares of priority 0's requests.
	Phases []PhaseShares
	// Watches are the steps' watches, in the order the steps ran.
	Watches []WatchResult
	// Notes are the Monitor's lines.
	Notes []string
	// Late is the most a step ran after its time: a busy machine can
	// starve the script, run two steps back to back, and leave a watch no
	// time.
	Late time.Duration
	// SVGPath is where the timeline was written.
	SVGPath string
}

// PhaseShares are the shares observed while one topology was in force,
// over its seconds in steady state: not the run's first second, nor a
// second in which the script acted or the one after, nor a disturbed
// second or the one after, and only seconds served by priority 0 alone.
type PhaseShares struct {
	// Label is the step that set the topology; "" for the scenario's own.
	Label  string
	Shares []Share
	// MaxShareError is the largest difference between Want and Got, in
	// percentage points.
	MaxShareError float64
}

// Share is one endpoint's observed share of its priority's traffic.
type Share struct {
	Backend   string
	Want, Got float64
}

// Watch returns the result of the watch called name; its zero value
// (not seen) when there is none.
func (s *Summary) Watch(name string) WatchResult {
	for _, w := range s.Watches {
		if w.Name == name {
			return w
		}
	}
	return WatchResult{Name: name}
}

// summarize counts the requests and computes each phase's shares.
func (s *Scenario) summarize(tl *timeline, phases []phase) *Summary {
	sum := &Summary{}
	counts := make([]map[string]int, len(phases))
	totals := make([]int, len(phases))
	for i, sec := range tl.Seconds {
		for _, n := range sec.Counts {
			sum.Requests += n
		}
		sum.Errors += sec.Errors
		t := phases[sec.Phase].topology
		if i == 0 || sec.Event != "" || tl.Seconds[i-1].Event != "" || sec.Disturbed || tl.Seconds[i-1].Disturbed || !onlyPriority0(sec, t.PriorityOf) {
			continue
		}
		if counts[sec.Phase] == nil {
			counts[sec.Phase] = map[string]int{}
		}
		for name, n := range sec.Counts {
			if _, ok := t.Want[name]; ok {
				counts[sec.Phase][name] += n
				totals[sec.Phase] += n
			}
		}
	}
	for i, p := range phases {
		if totals[i] == 0 {
			continue
		}
		ps := PhaseShares{Label: p.label}
		for _, name := range s.Backends {
			want, ok := p.topology.Want[name]
			if !ok {
				continue
			}
			got := float64(counts[i][name]) / float64(totals[i])
			ps.Shares = append(ps.Shares, Share{Backend: name, Want: want, Got: got})
			ps.MaxShareError = math.Max(ps.MaxShareError, 100*math.Abs(got-want))
		}
		sum.Phases = append(sum.Phases, ps)
	}
	return sum
}

// onlyPriority0 reports whether every request of s was served by priority 0.
func onlyPriority0(s second, priorityOf map[string]string) bool {
	served := 0
	for name, n := range s.Counts {
		if priorityOf[name] != "p0" {
			return false
		}
		served += n
	}
	return served > 0
}
