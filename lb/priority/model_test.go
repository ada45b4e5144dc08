package priority

import (
	"slices"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// model is the priority policy as gRFC A56 writes it, for the state machine
// test (statemachine_test.go) to compare lbkit against. Method names follow
// the pseudo-code; the children are test_script children whose states the
// test sets directly, so Update and ExitIdle have no effect on them here.
//
// Two things the spec leaves open are modelled as lbkit documents them:
//
//   - publishing: SetCurrentPriority sends the chosen child's state only if
//     it differs from what was last sent, or if the choice follows a parent
//     update (lbkit's idempotence rule);
//   - timers due at the same instant fire in the order they were started
//     (the lb.Serializer's rule), hence the sequence numbers, and existing
//     children are visited in name order during a config update.
type model struct {
	now               time.Time
	failoverTimeout   time.Duration
	deactivationDelay time.Duration
	// retainRemoved is A56's rule for children removed from the config;
	// false is A115's.
	retainRemoved bool

	priorities      []string // self.config.priorities
	children        map[string]*modelChild
	currentPriority int // -1 when none
	nextSeq         int

	lastSent  *publication
	published []publication // sent since the test last looked
}

type modelChild struct {
	name              string
	connectivityState lb.ConnectivityState
	picker            string // the picker's token; "<queue>" before any report
	// seenReadyOrIdleSinceTransientFailure: "it has previously reported
	// READY or IDLE more recently than TRANSIENT_FAILURE".
	seenReadyOrIdleSinceTransientFailure bool
	failoverTimer                        *modelTimer
	deactivationTimer                    *modelTimer
}

type modelTimer struct {
	deadline time.Time
	seq      int
}

// publication is what helper.UpdateState sends: a state and a picker token.
type publication struct {
	child  string
	state  lb.ConnectivityState
	picker string
}

const emptyListPicker = "<error: priority policy has empty priority list>"

func newModel(now time.Time, retainRemoved bool) *model {
	return &model{
		now:               now,
		failoverTimeout:   DefaultFailoverTimeout,
		deactivationDelay: DefaultDeactivationDelay,
		retainRemoved:     retainRemoved,
		children:          make(map[string]*modelChild),
		currentPriority:   -1,
	}
}

func (m *model) startTimer(d time.Duration) *modelTimer {
	m.nextSeq++
	return &modelTimer{deadline: m.now.Add(d), seq: m.nextSeq}
}

func (m *model) send(p publication, force bool) {
	if !force && m.lastSent != nil && *m.lastSent == p {
		return
	}
	m.lastSent = &p
	m.published = append(m.published, p)
}

// UpdateConfig is "Configuration Updates": existing children not in the
// new config are deactivated (or, with A115, removed), the others updated,
// and then the priority is chosen once.
func (m *model) UpdateConfig(priorities []string) {
	m.priorities = slices.Clone(priorities)
	for _, name := range m.sortedChildren() {
		if slices.Contains(priorities, name) {
			continue // child.Update(config): nothing to model
		}
		if m.retainRemoved {
			m.children[name].Deactivate(m)
		} else {
			m.DeleteChild(name)
		}
	}
	m.ChoosePriority(true)
}

// ChoosePriority is the pseudo-code's ChoosePriority.
func (m *model) ChoosePriority(afterUpdate bool) {
	if len(m.priorities) == 0 {
		m.currentPriority = -1
		m.send(publication{state: lb.TransientFailure, picker: emptyListPicker}, afterUpdate)
		return
	}
	m.currentPriority = -1
	for priority, name := range m.priorities {
		child, ok := m.children[name]
		if !ok {
			child = m.CreateChild(name)
		} else {
			child.MaybeReactivate()
		}
		if child.connectivityState == lb.Ready || child.connectivityState == lb.Idle {
			m.SetCurrentPriority(priority, true, afterUpdate)
			return
		}
		if child.FailoverTimerPending() {
			m.SetCurrentPriority(priority, false, afterUpdate)
			return
		}
	}
	for priority, name := range m.priorities {
		if m.children[name].connectivityState == lb.Connecting {
			m.SetCurrentPriority(priority, false, afterUpdate)
			return
		}
	}
	m.SetCurrentPriority(len(m.priorities)-1, false, afterUpdate)
}

// SetCurrentPriority is the pseudo-code's SetCurrentPriority.
func (m *model) SetCurrentPriority(priority int, deactivateLowerPriorities, afterUpdate bool) {
	m.currentPriority = priority
	if deactivateLowerPriorities {
		for _, name := range m.priorities[priority+1:] {
			if child, ok := m.children[name]; ok {
				child.Deactivate(m)
			}
		}
	}
	child := m.children[m.priorities[priority]]
	m.send(publication{child: child.name, state: child.connectivityState, picker: child.picker}, afterUpdate)
}

// CreateChild creates a child; "the timer will be started when the child
// is first created".
func (m *model) CreateChild(name string) *modelChild {
	child := &modelChild{name: name, connectivityState: lb.Connecting, picker: "<queue>"}
	child.failoverTimer = m.startTimer(m.failoverTimeout)
	m.children[name] = child
	return child
}

// DeleteChild destroys a child and its timers.
func (m *model) DeleteChild(name string) {
	delete(m.children, name)
}

func (c *modelChild) FailoverTimerPending() bool { return c.failoverTimer != nil }

// Deactivate starts the 15-minute timer, unless it is already running.
func (c *modelChild) Deactivate(m *model) {
	if c.deactivationTimer == nil {
		c.deactivationTimer = m.startTimer(m.deactivationDelay)
	}
}

// MaybeReactivate cancels the deactivation timer.
func (c *modelChild) MaybeReactivate() { c.deactivationTimer = nil }

// OnConnectivityStateUpdate is "Child Connectivity State Tracking": save
// the state and picker, start or cancel the failover timer, and choose.
func (m *model) OnConnectivityStateUpdate(name string, state lb.ConnectivityState, picker string) {
	child := m.children[name]
	child.connectivityState, child.picker = state, picker
	switch state {
	case lb.Ready, lb.Idle:
		child.seenReadyOrIdleSinceTransientFailure = true
		child.failoverTimer = nil
	case lb.TransientFailure:
		child.seenReadyOrIdleSinceTransientFailure = false
		child.failoverTimer = nil
	case lb.Connecting:
		if child.seenReadyOrIdleSinceTransientFailure && child.failoverTimer == nil {
			child.failoverTimer = m.startTimer(m.failoverTimeout)
		}
	}
	m.ChoosePriority(false)
}

// OnFailoverTimer: "the child will be treated as if it reported
// TRANSIENT_FAILURE" (it has no new picker, so it keeps its last one).
func (m *model) OnFailoverTimer(child *modelChild) {
	child.failoverTimer = nil
	m.OnConnectivityStateUpdate(child.name, lb.TransientFailure, child.picker)
}

// OnDeactivationTimer destroys the child.
func (m *model) OnDeactivationTimer(child *modelChild) {
	m.DeleteChild(child.name)
}

// pendingTimer is one pending timer and what firing it does.
type pendingTimer struct {
	*modelTimer
	fire func()
}

func (m *model) pendingTimers() []pendingTimer {
	var out []pendingTimer
	for _, name := range m.sortedChildren() {
		child := m.children[name]
		if t := child.failoverTimer; t != nil {
			out = append(out, pendingTimer{t, func() { m.OnFailoverTimer(child) }})
		}
		if t := child.deactivationTimer; t != nil {
			out = append(out, pendingTimer{t, func() { m.OnDeactivationTimer(child) }})
		}
	}
	slices.SortFunc(out, func(a, b pendingTimer) int {
		if c := a.deadline.Compare(b.deadline); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return out
}

// AdvanceToNextDeadline moves the clock to the earliest pending deadline
// and fires, one at a time in start order, every timer due then (a timer
// may be cancelled by one that fires before it). It returns false if no
// timer is pending.
func (m *model) AdvanceToNextDeadline() bool {
	timers := m.pendingTimers()
	if len(timers) == 0 {
		return false
	}
	m.now = timers[0].deadline
	for {
		timers := m.pendingTimers()
		if len(timers) == 0 || timers[0].deadline.After(m.now) {
			return true
		}
		timers[0].fire() // firing clears the timer from its child
	}
}

func (m *model) sortedChildren() []string {
	var names []string
	for name := range m.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// current returns the current child's name, or "".
func (m *model) current() string {
	if m.currentPriority < 0 {
		return ""
	}
	return m.priorities[m.currentPriority]
}
