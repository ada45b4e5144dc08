package sim

import (
	"time"

	"github.com/lbkit/lbkit/lb"
)

// loadWindow is a backend's load over whole seconds of virtual time, for
// its load reports: the busy slot-time and the completions of the second
// being counted, and the last whole second's utilization and rate.
type loadWindow struct {
	start      time.Duration // the second being counted began
	last       time.Duration // busy is integrated up to last
	busy       time.Duration // slot-time in service since start
	served     int           // completions since start
	util, rate float64       // the last whole second's
	out        lb.LoadReport // reused by every report: valid during Done
}

// loadSecond is the window of a load report.
const loadSecond = time.Second

// account integrates the n attempts in service up to now, closing the
// seconds that ended on the way. conc is unused here: utilization is
// divided by it when reported.
func (w *loadWindow) account(now time.Duration, n int) {
	for now >= w.start+loadSecond {
		end := w.start + loadSecond
		w.busy += time.Duration(n) * (end - w.last)
		w.util, w.rate = float64(w.busy)/float64(loadSecond), float64(w.served)
		w.start, w.last, w.busy, w.served = end, end, 0, 0
	}
	w.busy += time.Duration(n) * (now - w.last)
	w.last = now
}

// report returns the load report of a reply at now, n attempts in
// service: CPU utilization is the last whole second's busy slot-time over
// the backend's slots (unlimited: over one), QPS its completions.
func (w *loadWindow) report(now time.Duration, n, conc int) *lb.LoadReport {
	w.account(now, n)
	w.out = lb.LoadReport{CPUUtilization: w.util / float64(max(conc, 1)), QPS: w.rate}
	return &w.out
}
