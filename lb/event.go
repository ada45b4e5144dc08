package lb

import "time"

// EventKind says what an [Event] reports.
type EventKind int8

const (
	// EventChannelState: the channel's connectivity state changed to
	// State.
	EventChannelState EventKind = iota
	// EventPolicySwitch: the channel's top-level policy changed From one
	// policy To another (From is empty for the first policy).
	EventPolicySwitch
	// EventPriorityChange: a priority policy changed the child in use From
	// one child To another (From is empty for the first choice).
	EventPriorityChange
)

var eventKindNames = [...]string{"channel_state", "policy_switch", "priority_change"}

// String returns the kind's name, such as "priority_change".
func (k EventKind) String() string {
	if k >= 0 && int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return "unknown"
}

// MarshalText returns String's value, for JSON.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Event is a change in a channel or its balancer tree that users may
// subscribe to (conn.Channel.Subscribe). Fields that do not apply to its
// Kind are zero.
type Event struct {
	// Kind says what changed.
	Kind EventKind `json:"kind"`
	// Time is when it changed, on the channel's clock; set by the channel.
	Time time.Time `json:"time"`
	// Path is the [BuildOptions.ChildPath] of the balancer that reported
	// it: "" for the channel and the root policy.
	Path string `json:"path,omitempty"`
	// State is the channel's new state (EventChannelState).
	State ConnectivityState `json:"state"`
	// From and To are the old and new policy (EventPolicySwitch) or child
	// (EventPriorityChange).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}
