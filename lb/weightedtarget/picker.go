package weightedtarget

import (
	"errors"
	"fmt"
	"slices"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/edf"
)

// Errors of the pickers the policy publishes in TRANSIENT_FAILURE; every
// picker error is also wrapped with [lb.TransientFailureError].
// ErrNoTargets is wrapped by the error of the picker published when the
// config has no target. Match it with errors.Is.
var ErrNoTargets = errors.New("weightedtarget: no targets in the config")

var (
	// errNoFailure stands for the error of a child that reported
	// TRANSIENT_FAILURE with a picker that does not say its error (it is
	// not an lb.FailingPicker) or that queues: there is no error to report
	// but the state.
	errNoFailure = errors.New("reported TRANSIENT_FAILURE with a picker that gives no error")
	// errNotUsable is the error when no target counts in the aggregate
	// (every child reported SHUTDOWN, which balancers do not publish).
	errNotUsable = errors.New("weightedtarget: no target is usable")
)

// pubKey describes a published state: its connectivity state, and what its
// picker was built from. Two equal keys publish the same thing.
type pubKey struct {
	state lb.ConnectivityState
	// own is set when the policy publishes a state of its own, not one
	// built from its targets.
	own ownState
	// ready lists the READY targets in name order (READY only).
	ready []readyKey
	// failed is the target whose error the picker reports and failSeq
	// that failure (TRANSIENT_FAILURE only).
	failed  *child
	failSeq uint64
	// seq tells the policy's own resolver-error states apart.
	seq uint64
}

type readyKey struct {
	c      *child
	gen    uint64
	weight uint32
}

type ownState int

const (
	ownNone ownState = iota
	ownNoTargets
	ownResolverError
)

func (k pubKey) equal(o pubKey) bool {
	return k.state == o.state && k.own == o.own && k.failed == o.failed &&
		k.failSeq == o.failSeq && k.seq == o.seq && slices.Equal(k.ready, o.ready)
}

// publish computes the aggregate state of the targets and publishes it with
// its picker, unless it is what was last published and force is false.
// force republishes even an unchanged state (after a parent update, so the
// channel never keeps a stale picker); an unchanged picker is then sent
// again as it is, so its schedule continues exactly.
//
// The aggregate is [lb.StateCounter]'s over each target's aggState. The
// picker is:
//   - READY: a [weightedPicker] over the READY targets, or the target's own
//     picker when only one is READY;
//   - CONNECTING: a queueing picker;
//   - IDLE: a queueing picker whose first pick asks every target to leave
//     IDLE ([lb.NewIdlePicker]);
//   - TRANSIENT_FAILURE: a failing picker naming the target that failed
//     last and wrapping its error (see failureOf).
func (b *wtBalancer) publish(force bool) {
	if b.config == nil {
		return
	}
	key := b.aggregate()
	b.pub.Publish(key, force, func() lb.State {
		b.logger.Debug("weightedtarget: publishing", "state", key.state)
		return lb.State{ConnectivityState: key.state, Picker: b.buildPicker(key)}
	})
}

// refresh renews a state sent again unchanged: the last IDLE picker may
// have fired already, and a fresh one asks the targets to leave IDLE again.
func (b *wtBalancer) refresh(s lb.State) lb.State {
	if s.ConnectivityState == lb.Idle {
		s.Picker = lb.NewIdlePicker(b.opts.Scheduler, b.ExitIdle)
	}
	return s
}

// aggregate returns the key of what the policy should publish now.
func (b *wtBalancer) aggregate() pubKey {
	kids := b.children.Children()
	if len(kids) == 0 {
		return pubKey{state: lb.TransientFailure, own: ownNoTargets}
	}
	var counter lb.StateCounter
	for _, c := range kids {
		counter.Add(c.Data.aggState)
	}
	key := pubKey{state: counter.Aggregate()}
	switch key.state {
	case lb.Ready:
		for _, c := range kids {
			if c.Data.aggState == lb.Ready {
				key.ready = append(key.ready, readyKey{c: c, gen: c.Data.gen, weight: c.Data.weight})
			}
		}
	case lb.TransientFailure:
		for _, c := range kids {
			if c.Data.aggState == lb.TransientFailure && c.Data.failSeq >= key.failSeq {
				key.failed, key.failSeq = c, c.Data.failSeq
			}
		}
	}
	return key
}

// buildPicker returns the picker for key (see publish).
func (b *wtBalancer) buildPicker(key pubKey) lb.Picker {
	switch key.state {
	case lb.Ready:
		return b.readyPicker(key.ready)
	case lb.TransientFailure:
		if key.own == ownNoTargets {
			return lb.NewErrPicker(lb.TransientFailureError(b.resolverState.Explain(ErrNoTargets)))
		}
		if key.failed == nil {
			return lb.NewErrPicker(lb.TransientFailureError(errNotUsable))
		}
		err := fmt.Errorf("weightedtarget: every target is in TRANSIENT_FAILURE; latest failure, target %q: %w",
			key.failed.Name(), key.failed.Data.failErr)
		return lb.NewErrPicker(lb.TransientFailureError(err))
	case lb.Idle:
		return lb.NewIdlePicker(b.opts.Scheduler, b.ExitIdle)
	}
	return lb.NewQueuePicker()
}

// readyPicker builds the scheduler of the READY targets, continuing the
// previous one's schedule (edf.NewFrom): a target that stays READY keeps its
// place, so frequent picker changes (a child republishing, a target
// joining) do not restart the schedule at its beginning, where the heaviest
// targets come first, and so do not starve light targets. A scheduler with
// nothing to continue (the first, or one after a single READY target, whose
// schedule has no position) starts at a random point of its period, drawn
// from the tree's random source, so that many channels started together do
// not all send their first requests to the heaviest target.
func (b *wtBalancer) readyPicker(ready []readyKey) lb.Picker {
	entries := make([]edf.Entry[int], len(ready))
	for i, r := range ready {
		entries[i] = edf.Entry[int]{Item: r.c.Data.slot, Weight: r.weight}
	}
	base := b.sched
	if base != nil && base.Len() < 2 {
		// A schedule of one target has no position to carry: start anew,
		// at a random point, as after no schedule at all.
		base = nil
	}
	sched, err := edf.NewFrom(base, entries, edf.WithRandomStart(b.opts.Rand))
	if err != nil {
		// Weights are at least 1 and there is at least one entry: this
		// cannot happen. Fail visibly rather than publish a bad picker.
		b.logger.Error("weightedtarget: building the scheduler", "error", err)
		return lb.NewErrPicker(lb.TransientFailureError(fmt.Errorf("weightedtarget: %w", err)))
	}
	b.sched = sched
	if len(ready) == 1 {
		return ready[0].c.State().Picker
	}
	p := &weightedPicker{sched: sched, pickers: make([]lb.Picker, b.slots.Len())}
	for _, r := range ready {
		p.pickers[r.c.Data.slot] = r.c.State().Picker
	}
	return p
}

// weightedPicker chooses a READY target with an EDF scheduler and delegates
// the pick to that target's picker. It is immutable but for the
// scheduler's position, which is safe for concurrent use.
type weightedPicker struct {
	sched *edf.Scheduler[int]
	// pickers holds each READY target's picker at its slot; other slots
	// are nil and never scheduled.
	pickers []lb.Picker
}

// Pick chooses a target by weight and returns its picker's result, error
// included. It allocates nothing itself and, with a small enough period
// (see package edf), takes no lock.
func (p *weightedPicker) Pick(info lb.PickInfo) (lb.PickResult, error) {
	return p.pickers[p.sched.Pick()].Pick(info)
}

// failureOf returns the error of a child's TRANSIENT_FAILURE picker, read
// with [lb.FailureOf] without picking, when the child reports the state;
// the error is kept while the target's failure is sticky and is what the
// policy's own picker reports. A picker that does not say (it is not an
// [lb.FailingPicker]) or does not fail (it queues, as a priority child
// whose failover timer fired may publish) gives errNoFailure.
func failureOf(p lb.Picker) error {
	err := lb.FailureOf(p)
	if err == nil || errors.Is(err, lb.ErrNoSubConnAvailable) {
		return errNoFailure
	}
	return err
}
