package wrr

import (
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/edf"
)

// readyPicker spreads requests over the READY SubConns by their weights,
// with an EDF schedule. Pick never allocates and normally takes no lock
// (see edf.Scheduler).
type readyPicker struct {
	sched *edf.Scheduler[*endpoint]
	// base is the schedule sched continued, or nil for a new one. The
	// balancer carries base over instead of sched if this picker was never
	// picked from.
	base *edf.Scheduler[*endpoint]
	// picked is set by the first Pick, so that the balancer carries over
	// only schedules that have been used (see buildReadyPicker). After
	// the first Pick it is only read, so the cache line stays shared.
	picked atomic.Bool
}

// Pick returns the next READY SubConn of the schedule.
func (p *readyPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	if !p.picked.Load() {
		p.picked.Store(true)
	}
	ep := p.sched.Pick()
	return lb.PickResult{SubConn: ep.SubConn, Done: ep.Data.done}, nil
}
