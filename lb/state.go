package lb

import "fmt"

// ConnectivityState is the state of a SubConn, a balancer or a channel.
type ConnectivityState int

// The connectivity states, as in gRPC's connectivity-semantics document.
const (
	// Idle: not connected and not trying to; a request or Connect starts
	// a connection attempt.
	Idle ConnectivityState = iota
	// Connecting: a connection attempt is in progress.
	Connecting
	// Ready: connected and able to carry requests.
	Ready
	// TransientFailure: the last attempt failed; another will follow.
	TransientFailure
	// Shutdown: closed for good.
	Shutdown
)

var stateNames = [...]string{"IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE", "SHUTDOWN"}

// String returns the state's gRPC name, such as "TRANSIENT_FAILURE".
func (s ConnectivityState) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("ConnectivityState(%d)", int(s))
}

// MarshalText returns the state's name, so JSON shows "READY" rather than 2.
func (s ConnectivityState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a name that String returns.
func (s *ConnectivityState) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if n == string(b) {
			*s = ConnectivityState(i)
			return nil
		}
	}
	return fmt.Errorf("lb: unknown connectivity state %q", b)
}

// StateCounter counts children by connectivity state and computes their
// aggregate, the one rule every multi-child policy in lbkit uses:
//
//   - any child READY: READY;
//   - else any CONNECTING: CONNECTING;
//   - else any IDLE: IDLE;
//   - else (all TRANSIENT_FAILURE, or no children): TRANSIENT_FAILURE.
//
// SHUTDOWN children are not counted. The zero value is an empty counter. A
// StateCounter is not safe for concurrent use; balancers use it from inside
// their serialized calls.
type StateCounter struct {
	n [Shutdown]int
}

// Add counts one child in state s.
func (c *StateCounter) Add(s ConnectivityState) {
	if s >= 0 && s < Shutdown {
		c.n[s]++
	}
}

// Remove uncounts one child in state s, as when a child leaves s.
func (c *StateCounter) Remove(s ConnectivityState) {
	if s >= 0 && s < Shutdown && c.n[s] > 0 {
		c.n[s]--
	}
}

// Count returns how many children are counted in state s.
func (c *StateCounter) Count(s ConnectivityState) int {
	if s >= 0 && s < Shutdown {
		return c.n[s]
	}
	return 0
}

// Aggregate returns the aggregate state of the counted children.
func (c *StateCounter) Aggregate() ConnectivityState {
	switch {
	case c.n[Ready] > 0:
		return Ready
	case c.n[Connecting] > 0:
		return Connecting
	case c.n[Idle] > 0:
		return Idle
	default:
		return TransientFailure
	}
}

// AggregateState returns the aggregate of states by the rule of
// [StateCounter].
func AggregateState(states ...ConnectivityState) ConnectivityState {
	var c StateCounter
	for _, s := range states {
		c.Add(s)
	}
	return c.Aggregate()
}
