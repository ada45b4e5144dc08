package childmanager

import (
	"reflect"

	"github.com/lbkit/lbkit/lb"
)

// Publisher sends a multi-child policy's state to its ClientConn, and
// skips a state described by the same key as the last one sent, so that
// running the policy's aggregation again with no change reports nothing
// new. A key describes what a state is made of (the chosen child and its
// report, the READY targets and their weights), not the state itself.
//
// Like the policy that owns it, a Publisher is used inside the tree's
// serialized calls only.
type Publisher[K any] struct {
	cc      lb.ClientConn
	equal   func(a, b K) bool
	refresh func(lb.State) lb.State

	key   K
	state lb.State
	sent  bool
}

// NewPublisher returns a Publisher to cc that compares keys with equal.
// refresh, when not nil, renews a state about to be sent again unchanged
// (for example a picker that acts only once); nil sends it as it was.
func NewPublisher[K any](cc lb.ClientConn, equal func(a, b K) bool, refresh func(lb.State) lb.State) *Publisher[K] {
	return &Publisher[K]{cc: cc, equal: equal, refresh: refresh}
}

// Publish sends the state build returns, unless key equals the last key
// sent. Then, if force is set (after a parent update, so that the channel
// never keeps a stale picker), it sends the last state again, with the
// same picker, so a picker's schedule continues exactly; otherwise it
// sends nothing. build is called only when a new state is sent.
func (p *Publisher[K]) Publish(key K, force bool, build func() lb.State) {
	if p.sent && p.equal(key, p.key) {
		if force {
			if p.refresh != nil {
				p.state = p.refresh(p.state)
			}
			p.cc.UpdateState(p.state)
		}
		return
	}
	p.key, p.state, p.sent = key, build(), true
	p.cc.UpdateState(p.state)
}

// SameState reports whether a and b publish the same thing: the same
// connectivity state and the same picker value. Pickers of a type that
// cannot be compared are never the same. Owners use it to ignore a child
// that publishes again what it published last.
func SameState(a, b lb.State) bool {
	if a.ConnectivityState != b.ConnectivityState {
		return false
	}
	if a.Picker == nil || b.Picker == nil {
		return a.Picker == b.Picker
	}
	ta := reflect.TypeOf(a.Picker)
	if ta != reflect.TypeOf(b.Picker) || !ta.Comparable() {
		return false
	}
	return a.Picker == b.Picker
}
