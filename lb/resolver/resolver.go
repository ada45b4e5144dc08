// Package resolver holds the resolver side of lbkit's L9-style API: the
// [Address] a balancer connects to, the [State] a resolver publishes, the
// parsed [Target], and the [Builder]/[Resolver]/[ClientConn] interfaces with
// a scheme registry.
//
// It follows gRFC L9, "Resolver and balancer API changes"
// (https://github.com/grpc/proposal/blob/master/L9-go-resolver-balancer-API.md):
// resolvers publish the full address list and the service config on every
// update, never a delta.
//
// # Degraded states and errors
//
// A resolver tells the channel of a problem in one of two ways, never
// both for one event:
//
//   - It has a State to publish, but a degraded one (an empty address
//     list because every endpoint is UNHEALTHY, a cluster removed): it
//     publishes the State with [State.Degraded] set to the reason. The
//     balancer gets the State and its reason in one call, so a policy
//     that fails because of the State fails every pick with the reason
//     from its first picker on ([State.Explain]); no pick ever sees the
//     failure without it.
//   - It has no new State at all (a lookup failed, a file cannot be
//     read): it calls [ClientConn.ReportError]; the last State stays in
//     force.
//
// A [Describer] leaves the Degraded reason of its last State out of its
// [Description]: the channel's snapshot shows the reason of the State the
// tree applied last, so the resolver and the tree agree at every moment.
//
// This package must not import the balancer package (lb); lb imports it.
package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/attributes"
)

// Address is one server a balancer may connect to.
//
// Addresses are comparable with ==: two addresses are equal exactly when
// Addr, ServerName and Attributes are all equal, so an Address can be a map
// key. Attributes carry typed metadata such as the hierarchy path
// (package hierarchy) or the endpoint weight (package weight).
type Address struct {
	// Addr is the network address a connection is made to, such as
	// "10.0.0.1:443" or "/run/app.sock".
	Addr string
	// ServerName is the name used to authenticate the server; empty means
	// the channel's authority.
	ServerName string
	// Attributes is metadata for the load-balancing policies.
	Attributes attributes.Attributes
}

// Equal reports whether a and b are the same address: equal Addr,
// ServerName and Attributes.
func (a Address) Equal(b Address) bool { return a == b }

// String returns a readable form of a, for logs and test failures.
func (a Address) String() string {
	var b strings.Builder
	b.WriteString(a.Addr)
	if a.ServerName != "" {
		fmt.Fprintf(&b, " (server name %q)", a.ServerName)
	}
	if a.Attributes.Len() > 0 {
		b.WriteByte(' ')
		b.WriteString(a.Attributes.String())
	}
	return b.String()
}

// State is one complete resolver update: every address and the service
// config. A later State replaces an earlier one whole.
type State struct {
	// Addresses is the full list of resolved addresses, in the resolver's
	// order.
	Addresses []Address
	// ServiceConfig is the service config as JSON, for example
	// {"loadBalancingConfig": [{"pick_first": {}}]}. Nil means the resolver
	// has none; the channel then uses its default.
	ServiceConfig json.RawMessage
	// Attributes is metadata about the whole update, for the balancer.
	Attributes attributes.Attributes
	// Degraded, when non-nil, says why this State lacks what the resolver
	// would normally serve: for example an empty list because every
	// endpoint is UNHEALTHY, or because the cluster was removed. It
	// travels with the State, so the balancer that applies the State
	// knows the reason at the same moment: a policy that fails picks
	// because of the State (an empty priority list, zero addresses)
	// wraps it in its picker's error, and no picker is ever published
	// from such a State without it. Nil means the State is what the
	// resolver means to serve.
	//
	// A resolver that has no new State at all (a lookup failed, a file
	// cannot be read) reports that with [ClientConn.ReportError] instead.
	Degraded error
}

// ErrNoAddresses is wrapped by the error of a policy that fails because
// its resolver state has no address (round_robin, pick_first and the
// other leaf policies), and by a resolver's error when a resolution
// answered with none (the dns resolver's). Match it with errors.Is.
var ErrNoAddresses = errors.New("resolver produced zero addresses")

// Explain returns err, followed by s's [State.Degraded] reason when s has
// one: the error a policy fails picks with when it fails because of s (no
// address, no priority, no target), so that the pick says why. Both err
// and the reason match with errors.Is.
func (s State) Explain(err error) error {
	if s.Degraded == nil {
		return err
	}
	return fmt.Errorf("%w: %w", err, s.Degraded)
}

// SameState reports whether a and b publish the same thing: the same
// addresses in the same order, the same service config bytes, equal
// attributes, and Degraded reasons with the same text (both nil, or both
// non-nil with equal messages). Resolvers use it to skip publishing an
// update that changes nothing.
func SameState(a, b State) bool {
	return slices.Equal(a.Addresses, b.Addresses) &&
		string(a.ServiceConfig) == string(b.ServiceConfig) &&
		a.Attributes == b.Attributes &&
		sameError(a.Degraded, b.Degraded)
}

// sameError reports whether a and b are both nil, or both non-nil with the
// same message.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
}

// Target is a parsed dial target, "scheme://authority/endpoint" as in gRPC's
// naming document (https://github.com/grpc/grpc/blob/master/doc/naming.md).
type Target struct {
	// Scheme selects the resolver, such as "dns" or "passthrough".
	Scheme string
	// Authority is the optional authority, such as a DNS server to ask.
	Authority string
	// Endpoint is what the resolver resolves, such as "example.com:443".
	Endpoint string
}

// String returns the target in scheme://authority/endpoint form.
func (t Target) String() string {
	return t.Scheme + "://" + t.Authority + "/" + t.Endpoint
}

// ClientConn is what a resolver reports to. The channel implements it.
//
// Both methods may be called from any goroutine; the channel serializes the
// updates with every other call into its balancer tree.
type ClientConn interface {
	// UpdateState publishes a complete update and never blocks. Updates
	// that arrive faster than the channel applies them coalesce: the
	// newest State wins. A non-nil error means the update will never be
	// applied (lbkit's channel returns one only once it is closed); a
	// resolver may then retry with backoff, but need not: when a balancer
	// rejects an update (ErrBadResolverState) the channel itself asks for
	// a new resolution with backoff.
	UpdateState(State) error
	// ReportError reports that resolution failed and there is no new
	// State. The channel passes the error to its balancer; the last good
	// State stays in force. A resolver that has a State to publish, but a
	// degraded one (say, without endpoints), publishes it with
	// [State.Degraded] set instead, so the reason reaches the balancer
	// with the State, in the same step.
	ReportError(error)
}

// BuildOptions carries what a resolver may need besides its target.
type BuildOptions struct {
	// Clock drives every timer of the resolver (re-resolution, polling,
	// backoff). Nil means the real clock.
	Clock clock.Clock
	// Logger receives the resolver's logs. Nil means discard.
	Logger *slog.Logger
	// Rand is the resolver's own source of randomness (backoff jitter),
	// for it alone: it is not safe for concurrent use. Nil means a source
	// seeded at random.
	Rand *rand.Rand
	// ChannelTarget is the channel's dial target as it was given (the
	// grpc.target label of the channel's metrics), for a resolver's own
	// logs and metric labels. Empty when no channel builds the resolver.
	ChannelTarget string
}

// WithDefaults returns o with every nil field set to its documented default.
func (o BuildOptions) WithDefaults() BuildOptions {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return o
}

// Builder creates resolvers for one scheme.
type Builder interface {
	// Build starts resolving target and reports to cc. An error means the
	// target cannot be resolved by this scheme at all (for example it is
	// malformed); the channel fails to start with it. Build must return
	// promptly: it starts the resolution (on a goroutine of the
	// resolver's) and never waits for its I/O.
	Build(target Target, cc ClientConn, opts BuildOptions) (Resolver, error)
	// Scheme returns the scheme this builder resolves, in lower case.
	Scheme() string
}

// Resolver watches one target and reports every change to its ClientConn.
//
// # Never wait on I/O
//
// The channel calls ResolveNow from its serialized calls, and Close when it
// closes or goes idle, so a resolver that waits on I/O there stalls the
// whole channel. Both must return promptly (well under a second) whatever
// the resolver is doing: blocking I/O (reading a file, a DNS lookup, a
// call to a control plane) runs on a goroutine that Close cancels but does
// not wait for. An operation that cannot be cancelled (a read on a hung
// network mount, a lookup function that ignores its context) is left to
// finish on its own goroutine, which then reports nothing. Every built-in
// resolver keeps this contract; lbkit's channel also protects itself from
// one that does not, by closing resolvers on a goroutine of their own and
// waiting for them only a short grace period.
type Resolver interface {
	// ResolveNow asks for a resolution soon. It is a hint: a resolver may
	// rate-limit it. It must not block.
	ResolveNow()
	// Close stops the resolver promptly, without waiting on I/O (see the
	// type's documentation). No call to the ClientConn happens after Close
	// returns, and every goroutine the resolver started has ended, except
	// one left in an operation that cannot be cancelled, which reports
	// nothing when it ends.
	Close()
}

// Describer is implemented by resolvers that can say what they follow and
// where they stand, for a channel's snapshot (conn's Channel.Snapshot and
// its debug page). Describe is called from the channel's serialized calls:
// it must be safe for concurrent use and return promptly, without I/O.
type Describer interface {
	Describe() Description
}

// Description is a resolver's account of itself.
type Description struct {
	// Facts are what the resolver follows and its progress, in a fixed
	// order, such as {"cluster", "payments"} and {"endpoints version",
	// "42"}.
	Facts []Fact `json:"facts,omitempty"`
	// LastError is the last problem the resolver met that still stands
	// (a refused update, a lost connection); empty when there is none.
	//
	// A resolver leaves out the [State.Degraded] reason of the State it
	// published last: the channel's snapshot adds the reason of the State
	// its balancer tree applied last, so that the resolver and the tree
	// show the same reason at every moment, never one without the other
	// while an update is on its way.
	LastError string `json:"lastError,omitempty"`
}

// Fact is one named value of a [Description].
type Fact struct {
	// Name names the fact, such as "cluster".
	Name string `json:"name"`
	// Value is its value, as text.
	Value string `json:"value"`
}
