package pickfirst

import (
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// startFirstPass starts a pass from the first address.
func (b *balancer) startFirstPass() {
	b.firstPass = true
	b.idx = 0
	b.numTF = 0
	b.advance()
}

// advance moves the pass from b.idx to the first address it can wait on:
// it connects an IDLE SubConn (creating it if needed) or waits for one
// already CONNECTING, skipping SubConns in TRANSIENT_FAILURE. When no address
// is left, the pass ends in TRANSIENT_FAILURE. Each call walks each address
// at most once per pass, so a whole pass is O(len(addrs)).
func (b *balancer) advance() {
	for ; b.idx < len(b.addrs); b.idx++ {
		a := b.addrs[b.idx]
		sd := b.subConns[a]
		if sd == nil {
			var err error
			if sd, err = b.newSubConn(a); err != nil {
				b.logger.Warn("pickfirst: cannot create SubConn; skipping address", "addr", a.String(), "error", err)
				b.lastConnErr = err
				continue
			}
		}
		switch sd.state {
		case lb.Idle:
			sd.sc.Connect()
			return
		case lb.Connecting:
			return
		}
		// TRANSIENT_FAILURE: backing off from an earlier pass; skip it.
		// (No SubConn is READY here: one is selected as soon as it
		// reports READY, and a pass never runs while one is selected.)
	}
	b.endFirstPass()
}

// endFirstPass reports TRANSIENT_FAILURE once every address has failed and
// switches to sticky reconnection: every IDLE SubConn connects now, and each
// other one when it returns to IDLE.
func (b *balancer) endFirstPass() {
	b.firstPass = false
	b.numTF = 0
	b.reportFailure()
	for _, a := range b.addrs {
		if sd := b.subConns[a]; sd != nil && sd.state == lb.Idle {
			sd.sc.Connect()
		}
	}
}

// reportFailure reports TRANSIENT_FAILURE with the last connection error and
// asks for re-resolution, as C-core does: the addresses may be stale.
func (b *balancer) reportFailure() {
	// Every failure sets lastConnErr (a failed NewSubConn too), so it is
	// set whenever a pass has failed.
	b.report(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(
		fmt.Errorf("pickfirst: all %d addresses failed; last connection error: %w", len(b.addrs), b.lastConnErr))))
	b.cc.ResolveNow()
}

// newSubConn creates and records the SubConn of a, in IDLE.
func (b *balancer) newSubConn(a resolver.Address) (*subConn, error) {
	sd := &subConn{b: b, addr: a, state: lb.Idle}
	sc, err := b.cc.NewSubConn([]resolver.Address{a}, lb.NewSubConnOptions{StateListener: sd.onState})
	if err != nil {
		return nil, err
	}
	sd.sc = sc
	b.subConns[a] = sd
	return sd, nil
}

// onState is the SubConn's state listener.
func (sd *subConn) onState(s lb.SubConnState) {
	b := sd.b
	if sd.removed {
		return // shut down by the policy; SHUTDOWN and anything late
	}
	if s.ConnectivityState == lb.Shutdown {
		// Only the policy shuts its SubConns down, and it marks them
		// removed first; log anything else rather than act on it.
		b.logger.Warn("pickfirst: unexpected SHUTDOWN from a live SubConn", "addr", sd.addr.String())
		return
	}
	sd.state = s.ConnectivityState
	if s.ConnectivityState == lb.TransientFailure {
		b.attemptsFailed.Add(1)
		b.lastConnErr = s.ConnectionError
		if b.lastConnErr == nil {
			b.lastConnErr = fmt.Errorf("pickfirst: connection to %s failed", sd.addr)
		}
	}

	switch {
	case sd == b.selected:
		if s.ConnectivityState != lb.Ready {
			b.disconnections.Add(1)
			b.goIdle()
		}
		return
	case s.ConnectivityState == lb.Ready:
		b.selectSubConn(sd)
		return
	case b.state != lb.Connecting && b.state != lb.TransientFailure:
		// IDLE: nothing runs until ExitIdle. The record keeps the state
		// for the next pass.
		return
	}

	if b.firstPass {
		current := b.idx < len(b.addrs) && b.addrs[b.idx] == sd.addr
		if !current {
			return // a leftover of an earlier pass or of sticky reconnection
		}
		switch s.ConnectivityState {
		case lb.TransientFailure:
			b.idx++
			b.advance()
		case lb.Idle:
			// The attempt ended without success or failure; try again.
			sd.sc.Connect()
		}
		return
	}

	// Sticky TRANSIENT_FAILURE after the first pass.
	switch s.ConnectivityState {
	case lb.Idle:
		sd.sc.Connect()
	case lb.TransientFailure:
		b.numTF++
		if b.numTF >= len(b.subConns) {
			b.numTF = 0
			b.reportFailure()
		}
	}
}

// selectSubConn makes sd the READY SubConn: every other SubConn is shut down
// and a picker returning sd is reported.
func (b *balancer) selectSubConn(sd *subConn) {
	for _, a := range b.addrs {
		if other := b.subConns[a]; other != nil && other != sd {
			b.remove(other)
		}
	}
	b.attemptsSucceeded.Add(1)
	b.selected = sd
	b.firstPass = false
	b.report(lb.Ready, newReadyPicker(sd.sc))
}

// goIdle handles the loss of the READY connection: report IDLE with a picker
// that asks to leave IDLE, and ask for re-resolution.
func (b *balancer) goIdle() {
	b.selected = nil
	b.report(lb.Idle, lb.NewIdlePicker(b.sched, b.ExitIdle))
	b.cc.ResolveNow()
}
