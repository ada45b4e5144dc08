package lb

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/resolver"
)

// Builder creates balancers of one policy. A Builder may also implement
// [ConfigParser] to accept a config.
type Builder interface {
	// Build returns a new balancer that reports to cc. Build runs inside
	// the tree's serializer, like every Balancer method. opts is complete:
	// every caller (the channel, lb/childmanager, lbtest and the grpc-go
	// adapter) applies [BuildOptions.WithDefaults] first, and code that
	// calls Build itself must too.
	Build(cc ClientConn, opts BuildOptions) Balancer
	// Name returns the policy's name as it appears in loadBalancingConfig,
	// such as "pick_first".
	Name() string
}

// ConfigParser is implemented by builders whose policy takes a config.
// lbkit reaches it through [ParseConfig], which also accepts a builder
// whose only parser is the older ParseConfig(raw) (Config, error).
type ConfigParser interface {
	// ParseConfig parses the policy's JSON config object; empty raw and
	// null mean the policy's defaults. It returns the config and the JSON
	// paths, relative to the object and in document order, of the fields
	// it ignored because it does not know them, nested policy lists'
	// included ([ParsedPolicy.Unknown]): a channel warns about them or
	// refuses them (conn.WithStrictConfig). An error should be a
	// [*ConfigError] naming the field (relative to the policy's object)
	// and the reason, with a nil config. [ParseConfigWith] does the
	// plumbing: a policy writes only how its fields are read.
	ParseConfig(raw json.RawMessage) (Config, []string, error)
}

// Config is a policy's parsed configuration. Each policy defines its own
// config type and asserts it in UpdateClientConnState.
type Config interface{}

// ClientConnState is one update from the parent (the channel or a parent
// policy) to a balancer.
type ClientConnState struct {
	// ResolverState holds the addresses meant for this balancer.
	ResolverState resolver.State
	// BalancerConfig is this balancer's parsed config, as returned by
	// [ParseConfig] for its builder; nil when the builder has no parser.
	BalancerConfig Config
}

// Balancer receives updates from its parent, manages SubConns, and publishes
// its aggregate state with a picker through [ClientConn.UpdateState].
//
// All methods are called serially for one tree (see the package doc); none
// is called after Close, and nothing else of the balancer runs after it
// either: its parent closes the balancer's [Scope] (see
// [BuildOptions].Scheduler), which drops its pending hops and timers, its
// calls into its ClientConn and its SubConns' states. So a balancer keeps
// no closed flag.
type Balancer interface {
	// UpdateClientConnState gives the balancer new addresses and config.
	// Returning [ErrBadResolverState] asks the channel to re-resolve with
	// backoff; the balancer must still publish a state for the update.
	UpdateClientConnState(ClientConnState) error
	// ResolverError reports that the resolver failed; the last addresses
	// stay in force.
	ResolverError(error)
	// ExitIdle asks an IDLE balancer to connect. A balancer that starts
	// connecting should report CONNECTING at once rather than wait for a
	// SubConn to do so, so that it can never be left wedged in IDLE.
	ExitIdle()
	// Close shuts down every SubConn and closes every child. It is the
	// balancer's last call, and it runs with the balancer's scope already
	// closed: timers end without being stopped, and whatever Close
	// publishes or schedules is dropped.
	Close()
}

// State is a balancer's published state.
type State struct {
	// ConnectivityState is the balancer's aggregate state.
	ConnectivityState ConnectivityState
	// Picker chooses a SubConn for each request; it must not be nil.
	Picker Picker
}

// SubConnState is a SubConn's new state, delivered to the listener given
// at NewSubConn.
type SubConnState struct {
	// ConnectivityState is the SubConn's new state.
	ConnectivityState ConnectivityState
	// ConnectionError is why a connection attempt failed; set with
	// TransientFailure.
	ConnectionError error
}

// NewSubConnOptions configures a SubConn.
type NewSubConnOptions struct {
	// StateListener receives every state change of the SubConn, in order,
	// serialized with the tree's other calls. It must not be nil. The
	// last call it receives is SHUTDOWN, after Shutdown; it receives
	// nothing once the balancer that created the SubConn is closed (see
	// [Scope.ClientConn]).
	StateListener func(SubConnState)
	// HealthCheck asks the channel to gate the SubConn on its health check
	// when the channel has one (gRFC A17, client-side health checking):
	// once connected, the SubConn is CONNECTING until the first check,
	// READY while checks pass and TRANSIENT_FAILURE while they fail.
	// Policies that spread requests over many endpoints set it; pick_first
	// leaves it unset, as A17 says.
	HealthCheck bool
}

// ClientConn is what a balancer reports to: the channel for a top-level
// balancer, or a wrapper the parent made for a child. Its methods may be
// called from inside the tree's serialized calls without deadlock.
type ClientConn interface {
	// NewSubConn creates a SubConn for addrs, in IDLE; it connects when
	// Connect is called. The channel tries the addresses in order.
	NewSubConn(addrs []resolver.Address, opts NewSubConnOptions) (SubConn, error)
	// UpdateState publishes the balancer's state and picker.
	UpdateState(State)
	// ResolveNow asks the resolver to resolve again. The channel never
	// re-resolves on its own when a SubConn fails: a policy that wants
	// fresh addresses (pick_first when its connection is lost) calls this.
	ResolveNow()
	// Target returns the channel's dial target.
	Target() string
}

// SubConn is a logical connection to one server (the first reachable of its
// addresses). SubConns start IDLE.
type SubConn interface {
	// Connect starts connecting if the SubConn is IDLE; otherwise it does
	// nothing.
	Connect()
	// Shutdown closes the SubConn for good. The listener receives SHUTDOWN
	// and nothing after it. Calling Shutdown twice is harmless.
	Shutdown()
}

// PickInfo describes the request being balanced.
type PickInfo struct {
	// Ctx is the request's context; pickers read values from it (for
	// example a hash key) and must not block on it.
	Ctx context.Context
	// Method names the request, such as a gRPC full method name or an HTTP
	// path; empty when the transport has none.
	Method string
	// Metadata is the request's metadata (HTTP request headers, gRPC
	// outgoing metadata), for policies that read a header (ring_hash's
	// requestHashHeader); nil when the transport has none. It must not be
	// modified, and is valid only during the Pick call.
	Metadata Metadata
	// Hash is the request's hash for hash-based policies (ring_hash), set
	// when HasHash is: computed by the transport from the request (a
	// header, a cookie, the path) or given by the caller; a routing
	// policy (xds_routing_experimental) replaces it with the hash its
	// route's hash policies compute (gRFC A42) before its cluster picks.
	Hash uint64
	// HasHash reports whether Hash is set.
	HasHash bool
	// Authority is the request's authority (the HTTP Host, with its port
	// if the request names one), for policies that route by virtual host
	// (xds_routing_experimental); empty when the transport has none.
	Authority string
	// HTTPMethod is the request's HTTP method ("GET"), for routes that
	// match the ":method" header; empty when the transport has none.
	HTTPMethod string
}

// PickResult is a successful pick.
type PickResult struct {
	// SubConn carries the request. It must be one this tree created.
	SubConn SubConn
	// Done, when not nil, is called once when the request ends.
	Done func(DoneInfo)
	// Timeout, when not 0, bounds the request: the transport ends it
	// (with context.DeadlineExceeded) if it has not ended Timeout after
	// the pick, as a context deadline would. A routing policy sets it
	// from the route's timeout; a parent that wraps a child's result keeps
	// the smaller of its own and the child's.
	Timeout time.Duration
}

// DoneInfo describes how a request ended. The transport fills it in and
// passes it by value: building one allocates nothing.
type DoneInfo struct {
	// Err is nil when the request succeeded and non-nil when it failed, as
	// in grpc-go: a policy that judges backends (outlier_detection counts
	// successes and failures) looks at Err alone. A transport decides what
	// a failure is: adapters/nethttp sets Err for connection errors and,
	// by default, for 5xx responses (a *nethttp.StatusError).
	Err error
	// Status is the protocol's status for the response: the HTTP status
	// code (adapters/nethttp; 0 when no response was received, for
	// example the connection failed) or the gRPC status code
	// (adapters/grpcgo; 0 is OK).
	Status int
	// Metadata is the response's metadata (HTTP response headers, gRPC
	// trailers); nil when there is none. It is valid only during the
	// Done call: a policy that wants a value copies it.
	Metadata Metadata
	// Load is the backend's load report for the request, parsed and
	// validated by the transport (see [LoadReport]), or nil when the
	// response carried none or a malformed one (which the transport
	// counts). Like Metadata it is valid only during the Done call: the
	// transport may reuse it afterwards, so a policy that keeps it copies
	// it ([LoadReport.Clone]). Reading it allocates nothing.
	Load *LoadReport
}

// ErrRequestNotSent is wrapped by the Err of the DoneInfo a channel gives a
// pick it discarded before sending the request (the picked SubConn left
// READY after the picker was built; the channel waits for the next picker).
// It releases the pick rather than reporting a request's outcome: policies
// that count requests in flight (least_request) count it down; policies
// that judge backends by their outcomes (outlier_detection) ignore it.
var ErrRequestNotSent = errors.New("lb: the request was not sent")

// Metadata is read-only response metadata. http.Header satisfies it
// without conversion. Get returns the first value for key, or "" when
// there is none; keys are matched as the protocol matches them
// (case-insensitively for HTTP and gRPC).
type Metadata interface {
	Get(key string) string
}

// Picker chooses a SubConn for each request.
//
// Pick is called from many goroutines at once and must never block. It
// returns either a READY SubConn or an error whose meaning is given by
// [ClassifyPickError]:
//   - [ErrNoSubConnAvailable]: the request waits for the next picker;
//   - an error wrapping [ErrDropped]: the request fails, even if it is
//     wait-for-ready;
//   - any other error (normally one made with [TransientFailureError]): the
//     request fails unless it is wait-for-ready, which waits for the next
//     picker.
type Picker interface {
	Pick(PickInfo) (PickResult, error)
}

// Timer is a timer made by [Scheduler.AfterFunc].
type Timer interface {
	// Stop cancels the timer. Called from inside the tree's serialized
	// calls, it guarantees the callback will not run afterwards, even if
	// the clock already fired. It returns false if the callback already
	// ran or the timer was already stopped (closing its [Scope] stops
	// it).
	Stop() bool
}

// Scheduler runs work serialized with every other call into one balancer
// tree. [*Serializer] is the tree's; each balancer receives a [*Scope] of
// it, which ends with the balancer.
type Scheduler interface {
	// Schedule runs f later, serialized with the tree's other calls. It
	// never blocks and never runs f before returning. It returns false if
	// the scheduler is closed and f will never run.
	Schedule(f func()) bool
	// AfterFunc runs f, serialized, once d has passed on the scheduler's
	// clock. See [Timer] for Stop's guarantee.
	AfterFunc(d time.Duration, f func()) Timer
}

// BuildOptions carries what a balancer needs besides its ClientConn. A parent
// passes its own BuildOptions to the children it builds, so one tree shares
// one clock, logger, random source and serializer; each child's Scheduler
// is a [Scope] of the parent's own.
type BuildOptions struct {
	// Clock is the tree's clock, for reading the time. Nil means the real
	// clock. It must be the clock the Scheduler's timers run on.
	Clock clock.Clock
	// Logger receives the policy's logs. Nil means discard. It carries the
	// channel's attributes only: a policy logs through
	// [BuildOptions.PolicyLogger], which adds its name and ChildPath, and
	// passes Logger on to its children unchanged.
	Logger *slog.Logger
	// ChildPath names the balancer's place in the tree: the names of the
	// children from the root down to it, joined by "/" (such as
	// "p0/locality-a"); empty for the root. Parents that name children
	// (lb/childmanager) extend it.
	ChildPath string
	// Rand is the tree's source of randomness (shuffles, jitter, random
	// starts). It is not safe for concurrent use: use it only inside the
	// tree's serialized calls. Nil means a source seeded at random.
	Rand *rand.Rand
	// Scheduler runs picker hops and timer callbacks serialized with the
	// tree. A parent (package childmanager, the channel) gives each
	// balancer a [Scope] of its own, closed when the balancer is, so that
	// none of them runs after Close. Nil means a new [Serializer] on
	// Clock; code that then calls Balancer methods itself must do so
	// through that scheduler.
	Scheduler Scheduler
	// Target is the channel's dial target, for logs and metric labels.
	Target string
	// Metrics records the tree's metrics (see [MetricDescs]). Policies
	// resolve their handles in Build. Nil means [NopMetrics].
	Metrics MetricsRecorder
	// OnEvent receives the events a policy reports for users (priority
	// changes); it is called inside the tree's serialized calls and must
	// not block. Nil means the events are dropped.
	OnEvent func(Event)
}

// PolicyLogger returns Logger with the attributes of a policy's log lines:
// policy=name, and child=ChildPath when the balancer is a child. One key
// per concept: nothing else in the tree sets these keys. Call it after
// [BuildOptions.WithDefaults].
func (o BuildOptions) PolicyLogger(name string) *slog.Logger {
	if o.ChildPath == "" {
		return o.Logger.With("policy", name)
	}
	return o.Logger.With("policy", name, "child", o.ChildPath)
}

// WithDefaults returns o with every nil field set to its documented
// default. Whoever calls [Builder.Build] calls it first, so that builders
// need not.
func (o BuildOptions) WithDefaults() BuildOptions {
	// The clock, logger and random source default as a resolver's do.
	shared := resolver.BuildOptions{Clock: o.Clock, Logger: o.Logger, Rand: o.Rand}.WithDefaults()
	o.Clock, o.Logger, o.Rand = shared.Clock, shared.Logger, shared.Rand
	if o.Scheduler == nil {
		o.Scheduler = NewSerializer(o.Clock)
	}
	if o.Metrics == nil {
		o.Metrics = NopMetrics()
	}
	if o.OnEvent == nil {
		o.OnEvent = func(Event) {}
	}
	return o
}
