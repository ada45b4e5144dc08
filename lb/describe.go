package lb

import (
	"time"
)

// Describer is implemented by balancers that can describe themselves for a
// snapshot of the tree (conn.Channel.Snapshot). Describe runs inside the
// tree's serialized calls, like every Balancer method, so what it reads is
// consistent; it must not block, and should cost O(children + endpoints).
// A parent describes its children with [Describe].
type Describer interface {
	// Describe returns the balancer's node, with its children's.
	Describe() Node
}

// Describe returns b's node: b.Describe() when b is a [Describer], else a
// node naming only policy. A nil b gives a node naming policy.
func Describe(b Balancer, policy string) Node {
	if d, ok := b.(Describer); ok {
		n := d.Describe()
		if n.Policy == "" {
			n.Policy = policy
		}
		return n
	}
	return Node{Policy: policy}
}

// Node describes one balancer of the tree at one moment. Fields that do not
// apply to a policy are left zero (and omitted from JSON).
type Node struct {
	// Policy is the policy's name, such as "priority".
	Policy string `json:"policy"`
	// Name is the node's name in its parent (a priority or
	// weighted_target child); empty for the root.
	Name string `json:"name,omitempty"`
	// State is the state the balancer last published.
	State ConnectivityState `json:"state"`
	// LastError is the balancer's most recent error: why it is in
	// TRANSIENT_FAILURE, or the last connection error it saw; empty when
	// none.
	LastError string `json:"lastError,omitempty"`
	// Warning says why the policy cannot do what its config asks in the
	// tree it has now (outlier detection that cannot eject); empty when
	// it can.
	Warning string `json:"warning,omitempty"`
	// StateSince is when the balancer published State, on the channel's
	// clock; set for the root (by the channel), nil when unknown.
	StateSince *time.Time `json:"stateSince,omitempty"`

	// Current names the child in use (priority).
	Current string `json:"current,omitempty"`
	// Weight is the child's weight in its weighted_target parent.
	Weight uint32 `json:"weight,omitempty"`
	// FailoverDeadline is when the child's pending failover timer fires
	// (a priority child); nil when none is pending.
	FailoverDeadline *time.Time `json:"failoverDeadline,omitempty"`
	// Deactivated is set for a child kept after it left the config or
	// went out of use, until RetainUntil.
	Deactivated bool `json:"deactivated,omitempty"`
	// RetainUntil is when a deactivated child is removed.
	RetainUntil *time.Time `json:"retainUntil,omitempty"`

	// Routes are a routing policy's routes (xds_routing_experimental), in
	// the route configuration's order, with the requests each matched.
	Routes []RouteStats `json:"routes,omitempty"`

	// Children are the child balancers, in the parent's order.
	Children []Node `json:"children,omitempty"`
	// Endpoints are a leaf policy's endpoints, in its order.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// Endpoint describes one endpoint of a leaf policy at one moment.
type Endpoint struct {
	// Address is the endpoint's address.
	Address string `json:"address"`
	// State is the SubConn's state as the policy sees it.
	State ConnectivityState `json:"state"`
	// Weight is the endpoint's weight (weighted_round_robin); 0 when the
	// policy has none.
	Weight uint32 `json:"weight,omitempty"`
	// InFlight is the number of requests the policy counts as
	// outstanding (least_request).
	InFlight int64 `json:"inFlight,omitempty"`
	// Ejected is set while outlier_detection ejects the address.
	Ejected bool `json:"ejected,omitempty"`
	// EjectedUntil is when the ejection ends: the outlier_detection sweep
	// that will return the address (the first at or after its ejection
	// time), on the tree's clock; nil when not ejected.
	EjectedUntil *time.Time `json:"ejectedUntil,omitempty"`
	// Draining is set while the resolver marks the endpoint draining
	// (package draining): it gets no new picks while another READY
	// endpoint is not draining.
	Draining bool `json:"draining,omitempty"`

	// Connection is the connection's own state, filled in by the channel
	// (it differs from State while a health check gates the connection,
	// or an ejection hides it).
	Connection ConnectivityState `json:"connection"`
	// Health is the health check's verdict, filled in by the channel:
	// "passing", "failing", "unknown" (no answer yet), or "" when the
	// connection is not health-checked.
	Health string `json:"health,omitempty"`
	// Error is the connection's current error, filled in by the channel:
	// why it is in TRANSIENT_FAILURE (a failed dial) or why its health
	// check is failing; empty once it has recovered.
	Error string `json:"error,omitempty"`
	// StateSince is when the endpoint entered State, on the channel's
	// clock: for an ejected endpoint, when outlier_detection ejected it;
	// otherwise, filled in by the channel, when the SubConn entered the
	// state the channel last told the policy. Nil when the policy has not
	// connected it, or shows a state of its own.
	StateSince *time.Time `json:"stateSince,omitempty"`
	// ConnectionSince is when the connection entered Connection, on the
	// channel's clock, filled in by the channel.
	ConnectionSince *time.Time `json:"connectionSince,omitempty"`
	// LastConnectionError is the connection's last failed dial, with its
	// time; it stays after the connection recovers (Error says whether an
	// error is current). Nil when no dial has failed.
	LastConnectionError *TimedError `json:"lastConnectionError,omitempty"`
	// LastHealthCheck is the last health check's result, filled in by the
	// channel; nil when none has answered.
	LastHealthCheck *HealthCheckResult `json:"lastHealthCheck,omitempty"`
	// Requests counts the requests sent on this connection whose end was
	// reported (conn.PickResult.Finish), and Failures those that failed,
	// since the connection was created; filled in by the channel.
	Requests uint64 `json:"requests"`
	Failures uint64 `json:"failures"`
	// FailureRate is Failures / Requests; nil when there were no requests.
	FailureRate *float64 `json:"failureRate,omitempty"`

	// SubConn is the endpoint's SubConn, for the channel to look up; it is
	// not part of the JSON.
	SubConn SubConn `json:"-"`
}

// RouteStats describes one route of a routing policy and the requests it
// matched.
type RouteStats struct {
	// Route names the route: its virtual host's name (or
	// "virtualHosts[i]") and its own (or "routes[j]"), joined by " / ".
	Route string `json:"route"`
	// Match is the route's match in its JSON form.
	Match string `json:"match"`
	// Action is where it sends requests: "cluster NAME", or "weighted
	// clusters A:90, B:10".
	Action string `json:"action"`
	// Matches counts the requests the route matched, since the route
	// configuration has held this route at this position: an update that
	// leaves the route alone keeps its count, one that changes it starts
	// again at 0.
	Matches uint64 `json:"matches"`
	// Last is set for the route that matched the latest request (one of
	// the latest under concurrent picks); no route has it when that route
	// has since been changed or removed.
	Last bool `json:"last,omitempty"`
}

// TimedError is an error and when it happened.
type TimedError struct {
	// Error is the error's message.
	Error string `json:"error"`
	// Time is when it happened, on the channel's clock.
	Time time.Time `json:"time"`
}

// NewTimedError returns err's message at t; nil for a nil err.
func NewTimedError(err error, t time.Time) *TimedError {
	if err == nil {
		return nil
	}
	return &TimedError{Error: err.Error(), Time: t}
}

// HealthCheckResult is one health check's answer.
type HealthCheckResult struct {
	// Time is when the answer (or the timeout) came, on the channel's
	// clock.
	Time time.Time `json:"time"`
	// Passed is set when the check passed.
	Passed bool `json:"passed"`
	// Error is why it failed; empty when it passed.
	Error string `json:"error,omitempty"`
}

// SetState records s as the state n's balancer last published. A node in
// TRANSIENT_FAILURE with no LastError of its own gets its picker's error
// ([FailureOf]): why picks fail, for parents such as priority and
// weighted_target that keep no error of their own.
func (n *Node) SetState(s State) {
	n.State = s.ConnectivityState
	if n.LastError == "" && s.ConnectivityState == TransientFailure {
		n.LastError = ErrorString(FailureOf(s.Picker))
	}
}

// ErrorString returns err's message, or "" for nil: for [Node.LastError].
func ErrorString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
