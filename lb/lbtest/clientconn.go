package lbtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// EventKind names a recorded call.
type EventKind int

// The calls a [ClientConn] records.
const (
	EventNewSubConn EventKind = iota
	EventConnect
	EventShutdown
	EventUpdateState
	EventResolveNow
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case EventNewSubConn:
		return "NewSubConn"
	case EventConnect:
		return "Connect"
	case EventShutdown:
		return "Shutdown"
	case EventUpdateState:
		return "UpdateState"
	case EventResolveNow:
		return "ResolveNow"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one recorded call.
type Event struct {
	Kind EventKind
	// SubConn is set for NewSubConn, Connect and Shutdown.
	SubConn *SubConn
	// State is set for UpdateState.
	State lb.State
}

// String describes the event, for test failures.
func (e Event) String() string {
	switch e.Kind {
	case EventUpdateState:
		return fmt.Sprintf("UpdateState(%v)", e.State.ConnectivityState)
	case EventResolveNow:
		return "ResolveNow"
	}
	return fmt.Sprintf("%v(%v)", e.Kind, e.SubConn)
}

// ClientConn is a fake [lb.ClientConn] that records every call. Each kind of
// call has its own [Queue]; Events has them all in order. Create it with
// [NewClientConn] or through a [Harness].
//
// Its methods are safe for concurrent use. SubConn state listeners are
// called through the serializer given at creation, as the channel does.
type ClientConn struct {
	tb         TB
	serializer *lb.Serializer
	target     string

	// NewSubConns receives each SubConn created.
	NewSubConns Queue[*SubConn]
	// Connects receives a SubConn each time its Connect is called.
	Connects Queue[*SubConn]
	// Shutdowns receives a SubConn the first time its Shutdown is called.
	Shutdowns Queue[*SubConn]
	// States receives each state the balancer publishes.
	States Queue[lb.State]
	// ResolveNows receives one value per ResolveNow call.
	ResolveNows Queue[struct{}]

	mu       sync.Mutex
	events   []Event
	taken    int // events returned by TakeEvents so far
	subConns []*SubConn
	// newSubConnErr, when set by FailNewSubConn, makes the next
	// NewSubConn call fail with it.
	newSubConnErr error
	// queued holds the deliveries QueueState made since the last
	// DeliverQueued, in order.
	queued []func()
}

// NewClientConn returns a fake ClientConn whose SubConns deliver state
// through s. Failures of the fake (a delivery that hangs) fail tb.
func NewClientConn(tb TB, s *lb.Serializer, target string) *ClientConn {
	return &ClientConn{tb: tb, serializer: s, target: target}
}

func (cc *ClientConn) record(e Event) {
	cc.mu.Lock()
	cc.events = append(cc.events, e)
	cc.mu.Unlock()
}

// Events returns every recorded call, across kinds, in order.
func (cc *ClientConn) Events() []Event {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return slices.Clone(cc.events)
}

// TakeEvents returns the calls recorded since the previous TakeEvents (or
// since the start), in order: "what did the policy do since I last looked".
func (cc *ClientConn) TakeEvents() []Event {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	out := slices.Clone(cc.events[cc.taken:])
	cc.taken = len(cc.events)
	return out
}

// SubConns returns every SubConn created, in order.
func (cc *ClientConn) SubConns() []*SubConn {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return slices.Clone(cc.subConns)
}

// FailNewSubConn makes every later NewSubConn call fail with err; nil
// restores success.
func (cc *ClientConn) FailNewSubConn(err error) {
	cc.mu.Lock()
	cc.newSubConnErr = err
	cc.mu.Unlock()
}

// NewSubConn records and returns a new fake SubConn in IDLE.
func (cc *ClientConn) NewSubConn(addrs []resolver.Address, opts lb.NewSubConnOptions) (lb.SubConn, error) {
	if opts.StateListener == nil {
		return nil, errors.New("lbtest: NewSubConn: StateListener is nil")
	}
	if len(addrs) == 0 {
		return nil, errors.New("lbtest: NewSubConn: no address")
	}
	cc.mu.Lock()
	if err := cc.newSubConnErr; err != nil {
		cc.mu.Unlock()
		return nil, err
	}
	sc := &SubConn{cc: cc, id: len(cc.subConns), addrs: slices.Clone(addrs), listener: opts.StateListener}
	cc.subConns = append(cc.subConns, sc)
	cc.events = append(cc.events, Event{Kind: EventNewSubConn, SubConn: sc})
	cc.mu.Unlock()
	cc.NewSubConns.push(sc)
	return sc, nil
}

// UpdateState records a published state.
func (cc *ClientConn) UpdateState(s lb.State) {
	cc.record(Event{Kind: EventUpdateState, State: s})
	cc.States.push(s)
}

// ResolveNow records a re-resolution request.
func (cc *ClientConn) ResolveNow() {
	cc.record(Event{Kind: EventResolveNow})
	cc.ResolveNows.push(struct{}{})
}

// Target returns the target given at creation.
func (cc *ClientConn) Target() string { return cc.target }

// LastState returns the newest published state and true, or false if none
// was published. It does not receive from States.
func (cc *ClientConn) LastState() (lb.State, bool) { return cc.States.Last() }

// WaitForState receives published states until one is in want, or ctx ends;
// the error then names the last state seen.
func (cc *ClientConn) WaitForState(ctx context.Context, want lb.ConnectivityState) (lb.State, error) {
	last := "none"
	for {
		s, err := cc.States.Receive(ctx)
		if err != nil {
			return lb.State{}, fmt.Errorf("lbtest: no %v state published (last seen: %s): %w", want, last, err)
		}
		if s.ConnectivityState == want {
			return s, nil
		}
		last = s.ConnectivityState.String()
	}
}

// WaitForPicker receives published states until check returns nil for one's
// picker, or ctx ends; the error then includes check's last error.
func (cc *ClientConn) WaitForPicker(ctx context.Context, check func(lb.Picker) error) (lb.Picker, error) {
	var last error = errors.New("no state published")
	for {
		s, err := cc.States.Receive(ctx)
		if err != nil {
			return nil, fmt.Errorf("lbtest: no picker passed the check (last: %v): %w", last, err)
		}
		if last = check(s.Picker); last == nil {
			return s.Picker, nil
		}
	}
}

// SubConn is a fake [lb.SubConn]. A test drives its state with
// [SubConn.UpdateState]. Its methods are safe for concurrent use.
type SubConn struct {
	cc       *ClientConn
	id       int
	addrs    []resolver.Address
	listener func(lb.SubConnState)

	mu       sync.Mutex
	connects int
	shutdown bool
	state    lb.ConnectivityState
}

// String returns "SubConn(id: addresses)".
func (sc *SubConn) String() string {
	addrs := make([]string, len(sc.addrs))
	for i, a := range sc.addrs {
		addrs[i] = a.Addr
	}
	return fmt.Sprintf("SubConn(%d: %v)", sc.id, addrs)
}

// Addresses returns the addresses the SubConn was created with.
func (sc *SubConn) Addresses() []resolver.Address { return slices.Clone(sc.addrs) }

// Connect records the call.
func (sc *SubConn) Connect() {
	sc.mu.Lock()
	sc.connects++
	sc.mu.Unlock()
	sc.cc.record(Event{Kind: EventConnect, SubConn: sc})
	sc.cc.Connects.push(sc)
}

// Shutdown records the first call and delivers SHUTDOWN to the listener.
func (sc *SubConn) Shutdown() {
	sc.mu.Lock()
	if sc.shutdown {
		sc.mu.Unlock()
		return
	}
	sc.shutdown = true
	sc.state = lb.Shutdown
	sc.mu.Unlock()
	sc.cc.record(Event{Kind: EventShutdown, SubConn: sc})
	sc.cc.Shutdowns.push(sc)
	sc.cc.serializer.Schedule(func() { sc.listener(lb.SubConnState{ConnectivityState: lb.Shutdown}) })
}

// IsShutdown reports whether Shutdown was called.
func (sc *SubConn) IsShutdown() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.shutdown
}

// ConnectCount returns how many times Connect was called.
func (sc *SubConn) ConnectCount() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.connects
}

// State returns the last state set with UpdateState (IDLE at first,
// SHUTDOWN after Shutdown).
func (sc *SubConn) State() lb.ConnectivityState {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.state
}

// UpdateState delivers s to the SubConn's listener through the serializer
// and waits until the listener and everything it scheduled have finished;
// a hang fails the test. After Shutdown it does nothing, as a real channel
// delivers nothing after SHUTDOWN. It must be called from the test's
// goroutine, not from inside a serialized callback.
func (sc *SubConn) UpdateState(s lb.SubConnState) {
	sc.cc.tb.Helper()
	sc.cc.DeliverQueued()
	deliver, ok := sc.prepare(s)
	if !ok {
		return
	}
	if err := runAndSettle(sc.cc.serializer, deliver); err != nil {
		sc.cc.tb.Fatalf("lbtest: delivering %v to %v: %v", s.ConnectivityState, sc, err)
	}
}

// QueueState records s as the SubConn's state and queues its delivery
// without waiting. Every report queued this way since the last delivery is
// delivered back to back, in order, in one serialized call, when the
// harness next waits on the serializer ([Harness.Settle], [Harness.Do],
// [Harness.Advance], [SubConn.UpdateState]) or [ClientConn.DeliverQueued] is
// called: as when many connections change state while the tree is busy.
// Use it to test that a policy coalesces work across a burst: nothing the
// first report schedules can run before the last report is delivered. A
// report for a SubConn shut down by the time it is delivered is dropped.
// Like UpdateState, it must be called from the test's goroutine.
func (sc *SubConn) QueueState(s lb.SubConnState) {
	sc.cc.tb.Helper()
	deliver, ok := sc.prepare(s)
	if !ok {
		return
	}
	sc.cc.mu.Lock()
	sc.cc.queued = append(sc.cc.queued, deliver)
	sc.cc.mu.Unlock()
}

// DeliverQueued schedules, as one serialized call, the delivery of every
// report queued with [SubConn.QueueState] since the last call, and returns
// without waiting. The harness calls it before each of its waits.
func (cc *ClientConn) DeliverQueued() {
	cc.mu.Lock()
	queued := cc.queued
	cc.queued = nil
	cc.mu.Unlock()
	if len(queued) == 0 {
		return
	}
	if !cc.serializer.Schedule(func() {
		for _, deliver := range queued {
			deliver()
		}
	}) {
		cc.tb.Fatalf("lbtest: delivering %d queued SubConn states: the serializer is closed", len(queued))
	}
}

// prepare records s as the SubConn's state and returns the serialized call
// that delivers it to the listener (unless the SubConn is shut down by the
// time it runs). It returns false, recording nothing, after Shutdown.
func (sc *SubConn) prepare(s lb.SubConnState) (deliver func(), ok bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.shutdown {
		return nil, false
	}
	switch s.ConnectivityState {
	case lb.Idle:
	case lb.Shutdown:
		sc.cc.tb.Fatalf("lbtest: %v: SHUTDOWN is reported by Shutdown, which the policy calls", sc)
	default:
		if sc.connects == 0 {
			sc.cc.tb.Fatalf("lbtest: %v cannot report %v: the policy never called Connect, and a channel connects a SubConn only once asked", sc, s.ConnectivityState)
		}
	}
	sc.state = s.ConnectivityState
	return func() {
		if !sc.IsShutdown() {
			sc.listener(s)
		}
	}, true
}

// Connecting reports CONNECTING; see [SubConn.UpdateState].
func (sc *SubConn) Connecting() { sc.UpdateState(lb.SubConnState{ConnectivityState: lb.Connecting}) }

// Ready reports READY; see [SubConn.UpdateState].
func (sc *SubConn) Ready() { sc.UpdateState(lb.SubConnState{ConnectivityState: lb.Ready}) }

// Idle reports IDLE; see [SubConn.UpdateState].
func (sc *SubConn) Idle() { sc.UpdateState(lb.SubConnState{ConnectivityState: lb.Idle}) }

// Fail reports TRANSIENT_FAILURE with err; see [SubConn.UpdateState].
func (sc *SubConn) Fail(err error) {
	sc.UpdateState(lb.SubConnState{ConnectivityState: lb.TransientFailure, ConnectionError: err})
}

// hangGuard bounds every wait of the harness. It only turns a hang into a
// test failure; no test relies on it elapsing.
const hangGuard = 10 * time.Second

// runAndSettle runs f on s and waits until s has nothing queued.
func runAndSettle(s *lb.Serializer, f func()) error {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := s.Run(ctx, f); err != nil {
		return err
	}
	return s.WaitIdle(ctx, time.Time{})
}
