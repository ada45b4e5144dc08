// Package grpcgo runs lbkit's load-balancing policies inside grpc-go
// (google.golang.org/grpc): it registers lbkit builders with grpc-go's
// balancer registry, so that a service config can name them, and bridges
// each grpc-go call to the lbkit balancer and back.
//
// It is a separate Go module, github.com/lbkit/lbkit/adapters/grpcgo, so
// that lbkit itself never depends on grpc-go.
//
// # Registration
//
// Importing the package registers ten policies with grpc-go, in its init
// function (grpc-go's registry may only be written during initialization):
//
//   - [PickFirstName] ("lbkit_pick_first"): lbkit's pick_first;
//   - [RoundRobinName] ("lbkit_round_robin"): lbkit's round_robin;
//   - [LeastRequestName] ("lbkit_least_request"): lbkit's
//     least_request_experimental (gRFC A48), which counts every RPC
//     against its endpoint until grpc-go reports it done;
//   - [PriorityName] ("lbkit_priority"): lbkit's priority_experimental;
//   - [WeightedTargetName] ("lbkit_weighted_target"): lbkit's
//     weighted_target_experimental;
//   - [WeightedRoundRobinName] ("lbkit_weighted_round_robin"): lbkit's
//     weighted_round_robin, by per-endpoint weights;
//   - [OutlierDetectionName] ("lbkit_outlier_detection"): lbkit's
//     outlier_detection_experimental (gRFC A50), judging each backend by
//     its RPCs' status;
//   - [RingHashName] ("lbkit_ring_hash"): lbkit's ring_hash_experimental
//     (gRFC A42, A76), keyed by the call's requestHashHeader metadata or
//     the hash set with [WithRequestHash], which picks as grpc-go's own
//     ring_hash does;
//   - [MaglevName] ("lbkit_maglev"): lbkit's maglev_experimental, the same
//     over Envoy's Maglev table;
//   - [PeakEWMAName] ("lbkit_peak_ewma"): lbkit's peak_ewma_experimental,
//     which prefers the backend answering fastest for its load.
//
// The names are prefixed, so grpc-go's own pick_first, round_robin,
// least_request_experimental and weighted_round_robin stay available. [Register] registers any lbkit
// builder under a name of your choosing, with [Option]s for its clock,
// logger and random source; call it from an init function too.
//
// # Configuration
//
// A policy's config is the same JSON as in lbkit: grpc-go hands the JSON to
// [Builder.ParseConfig], which parses it as lbkit does ([lb.ParseConfig]).
// The fields the policy does not know are ignored, as grpc-go ignores
// them: its parser cannot report them.
// Child policy lists nested in a config (the "config" of a priority child,
// the "childPolicy" of a weighted target) are parsed by lbkit
// ([lb.ParsePolicyList]) and name lbkit policies as lbkit registers them,
// without the prefix: "pick_first", "round_robin",
// "least_request_experimental", "weighted_round_robin",
// "weighted_target_experimental", "priority_experimental". For example:
//
//	{"loadBalancingConfig": [{"lbkit_priority": {
//	  "children": {
//	    "p0": {"config": [{"weighted_round_robin": {}}]},
//	    "p1": {"config": [{"pick_first": {}}]}
//	  },
//	  "priorities": ["p0", "p1"]
//	}}]}
//
// # Addresses
//
// The bridge reads grpc-go's resolver.State.Endpoints, which grpc-go's
// channel always fills in (when a resolver publishes only Addresses, it
// makes one endpoint per address). Addresses is read only when Endpoints is
// nil, as when a parent policy sends no endpoints.
//
// Each endpoint becomes one lbkit address, hence one SubConn: its Addr and
// ServerName are those of the endpoint's first address, and an endpoint of
// several addresses gets an attribute that tells it apart. When the lbkit
// policy creates a SubConn for it, the bridge gives grpc-go all of the
// endpoint's addresses, as they came from the resolver (Attributes
// included), and grpc-go connects to the first that answers. (grpc-go has
// deprecated SubConns of several addresses; should it remove them, the
// bridge would have to give each address its own lbkit address.)
//
// lbkit's weight ([weight.Set]) and hierarchical path ([hierarchy.Set]) are
// set on grpc-go addresses with [SetWeight] and [SetHierarchyPath], or on
// endpoints with [SetEndpointWeight] and [SetEndpointHierarchyPath]. The
// bridge takes an endpoint's values from its Attributes, else from its
// first address's Attributes.
//
// # Pickers and errors
//
// The lbkit picker is wrapped; a READY pick returns the grpc-go SubConn
// stored in the lbkit SubConn (no map, no lock) and allocates nothing. Pick
// errors are converted so that grpc-go does what lbkit's contract
// ([lb.ClassifyPickError]) says:
//
//   - [lb.ErrNoSubConnAvailable] becomes [balancer.ErrNoSubConnAvailable]:
//     the RPC waits for the next picker;
//   - a transient failure ([lb.ErrTransientFailure]) or any unmarked error
//     is returned as a plain error (never a status error): grpc-go fails
//     the RPC with UNAVAILABLE and the error's message, unless it is
//     wait-for-ready, in which case it waits for the next picker;
//   - a drop ([lb.ErrDropped]) becomes a status error with code UNAVAILABLE
//     and the error's message: grpc-go fails the RPC even if it is
//     wait-for-ready.
//
// A pick's Done receives the RPC's outcome: [balancer.DoneInfo.Err] becomes
// [lb.DoneInfo.Err] (nil is success), its gRPC status code
// [lb.DoneInfo.Status], and the trailer [lb.DoneInfo.Metadata].
//
// # What a pick knows, and what it cannot do
//
// The lbkit picker gets the call's full method name ([lb.PickInfo.Method]),
// its outgoing metadata ([lb.PickInfo.Metadata]), the hash set with
// [WithRequestHash] ([lb.PickInfo.Hash]), and the channel's authority
// ([lb.PickInfo.Authority]): grpc-go's balancer.BuildOptions.Authority,
// which is the dial target's authority or the one set with
// grpc.WithAuthority, so a routing policy (xds_routing_experimental)
// finds its virtual host. grpc-go's balancer.PickInfo carries no
// authority of its own, so a per-call grpc.CallAuthority does not reach
// the picker.
//
// An lbkit pick's [lb.PickResult.Timeout] (a route's timeout, gRFC A31's
// max_stream_duration) is not applied: grpc-go's balancer.PickResult has
// no deadline, and a picker cannot shorten the deadline of the call it
// picks for (grpc-go's own xDS client applies route timeouts in its
// config selector, an API closed to balancers). Rather than end calls
// some other way that grpc-go would report differently, the adapter
// leaves the call's deadline as the caller set it, counts such picks, and
// logs the first per channel at WARN. Set the deadline on the call's
// context, or a methodConfig timeout in the service config.
//
// # Serialization
//
// grpc-go does not give a balancer its serializer, so each balancer the
// bridge builds has its own [lb.Serializer], used as the tree's
// [lb.BuildOptions.Scheduler]. Every call from grpc-go — Build,
// UpdateClientConnState, ResolverError, ExitIdle, Close and every SubConn
// state listener — runs the lbkit call inside that serializer with
// [lb.Serializer.Run] and waits for it, so grpc-go's calls, lbkit's timer
// callbacks and picker hops run one at a time, in order.
//
// Inside the serializer the lbkit tree calls grpc-go's ClientConn
// (NewSubConn, UpdateState, ResolveNow) and SubConns directly. This cannot
// deadlock: those grpc-go methods take only grpc-go's short internal locks
// and never wait for grpc-go's serializer (which may be the goroutine
// blocked in Run); and the one lock grpc-go holds while it calls a
// balancer (the graceful switch's, around SubConn state listeners and the
// Close of a replaced balancer) is not one of those. The one thing the bridge needs from its ClientConn is that
// it never calls back into the balancer synchronously from NewSubConn,
// Connect, Shutdown or UpdateState (grpc-go's delivers SubConn states
// from its serializer): such a call would wait for the serializer that is
// making it. A fake ClientConn in a test must deliver states from outside
// the balancer's calls, as the real one does.
//
// Close closes the lbkit balancer inside the serializer, then closes the
// serializer, which stops its timers: no goroutine is left.
//
// # Time and randomness
//
// [WithClock], [WithLogger] and [WithRand] set what every balancer of a
// [Builder] uses. With a mock clock, [WithSerializerObserver] hands a test
// each balancer's serializer, so it can advance the clock to
// [lb.Serializer.NextDeadline] and wait with [lb.Serializer.WaitIdle], as
// package lbtest does.
package grpcgo
