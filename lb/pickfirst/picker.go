package pickfirst

import (
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// readyPicker returns one READY SubConn. Its result is built once, so Pick
// neither allocates nor blocks.
type readyPicker struct {
	result lb.PickResult
}

func newReadyPicker(sc lb.SubConn) *readyPicker {
	return &readyPicker{result: lb.PickResult{SubConn: sc}}
}

// Pick returns the READY SubConn.
func (p *readyPicker) Pick(lb.PickInfo) (lb.PickResult, error) { return p.result, nil }

// idlePicker is reported in IDLE. Its first Pick schedules the balancer's
// ExitIdle on the tree's scheduler; every Pick queues the request, which
// the CONNECTING picker that ExitIdle reports keeps queued.
type idlePicker struct {
	b     *balancer
	fired atomic.Bool
}

func newIdlePicker(b *balancer) *idlePicker { return &idlePicker{b: b} }

// Pick queues the request and, the first time, asks the balancer to leave
// IDLE.
func (p *idlePicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	if !p.fired.Load() && p.fired.CompareAndSwap(false, true) {
		p.b.sched.Schedule(p.b.ExitIdle)
	}
	return lb.PickResult{}, lb.ErrNoSubConnAvailable
}
