// Package wrr implements the weighted_round_robin load-balancing policy of
// the gRPC proposal "weighted_round_robin lb_policy for per endpoint
// load_balancing_weight from ClusterLoadAssignment response": requests are
// spread over the READY endpoints in proportion to their weights, in the
// order an earliest-deadline-first schedule ([edf.Scheduler]) gives.
//
// The policy is registered under [Name] by this package's init. Build it
// through the registry ([lb.Get]) or directly with [Builder]; its config is
// a [Config].
//
// # Weights from load reports (gRFC A58)
//
// grpc-go registers gRFC A58's client-side weighted round robin under the
// same name, whose weights come from the backends' ORCA load reports. This
// policy is both: it spreads requests by the endpoints' configured weights
// until load reports arrive, and by A58's weights when they do, so a
// service config written for grpc-go's policy does here what A58 says.
//
// Every pick carries a Done that reads the request's load report
// ([lb.DoneInfo].Load, filled in by the transport: adapters/nethttp from
// the endpoint-load-metrics header, adapters/grpcgo from gRPC's
// endpoint-load-metrics-bin trailer). A report gives the endpoint the
// weight qps / (utilization + eps/qps × errorUtilizationPenalty), where
// utilization is the application utilization if positive, else the CPU
// utilization; a report without positive qps and utilization changes
// nothing. A weight is usable once the endpoint has reported for
// blackoutPeriod (counted from its first report, and again after its
// SubConn becomes READY anew or its weight expires) and until its last
// report is weightExpirationPeriod old.
//
// Every weightUpdatePeriod (at least 100 ms), on the tree's serializer,
// the policy computes the READY endpoints' weights and publishes a new
// picker if they changed; the same weights are used by every picker it
// builds for other reasons. When two or more READY endpoints have a usable
// weight, the schedule uses those, the others getting their mean (A58);
// otherwise it uses the configured weights (A58 says round robin, which is
// what configured weights give when no address carries one). Reported
// weights are scaled to integers, the heaviest to 65,536, and scheduled by
// the same exact EDF (package edf), carried over from picker to picker.
// The timer runs only while some endpoint's last report is fresh: a policy
// whose backends never report keeps no timer and behaves as before.
//
// The config's A58 fields ([LoadReportConfig]) are parsed with A58's
// defaults and bounds. enableOobLoadReport: true is refused with an error
// saying that lbkit does not implement out-of-band reporting;
// oobReportingPeriod is parsed and unused. Inside grpc-go, the
// adapters/grpcgo module registers this policy as
// lbkit_weighted_round_robin, so the two never collide there; an xDS
// ClientSideWeightedRoundRobin cluster policy maps to this policy with its
// A58 fields (adapters/xds).
//
// # Endpoints and weights
//
// Each address of an update is an endpoint with one [lb.SubConn]. Its
// weight is the address's [weight] attribute ([weight.Get]):
//
//   - an address without a weight has weight 1, the smallest weight, as
//     in Envoy;
//   - a weight of 0 is treated as 1 and logged (at warning level) once per
//     endpoint: resolvers are meant to reject it at the source.
//
// Addresses that differ only in their weight are the same endpoint: the
// first one in the list gives the endpoint its place and its weight, later
// ones are dropped. Addresses that differ in Addr, ServerName or any other
// attribute are distinct endpoints. So an update that changes only weights
// keeps every SubConn and its connection. A SubConn is created with the
// endpoint's first address as it was then; its weight attribute is not
// updated (the policy reads weights from updates, not from SubConns).
//
// # Picker and states
//
// The endpoint list, SubConns and states below are package endpointlist's,
// shared with round_robin and least_request_experimental. The policy
// creates a SubConn for each new endpoint, asks it to connect at
// once, and asks again whenever it reports IDLE. The READY picker contains
// exactly the READY SubConns. The policy's state is the aggregate of its
// SubConns' counted states by [lb.StateCounter] (READY > CONNECTING > IDLE >
// TRANSIENT_FAILURE), where a SubConn counts as:
//
//   - READY or CONNECTING, as it reported;
//   - CONNECTING when it reported IDLE, or has not reported yet: the
//     policy has already asked it to connect;
//   - TRANSIENT_FAILURE from the moment it reports TRANSIENT_FAILURE until
//     it is READY again, whatever it reports in between ("sticky"), so
//     that endpoints that keep failing and retrying do not hold the policy
//     in CONNECTING.
//
// Hence the policy is never IDLE, and [lb.Balancer.ExitIdle] does nothing.
// It publishes:
//
//   - READY: a picker over the READY SubConns, whose picks carry the
//     endpoint's Done (made once per endpoint); Pick never allocates and
//     is lock-free, unless the schedule's period (the sum of the weights
//     divided by their gcd) exceeds max(2^17, 64n) for n READY
//     endpoints, where it takes a short mutex around an O(log n) heap
//     step (see package edf);
//   - CONNECTING: a picker that queues requests ([lb.NewQueuePicker]);
//   - TRANSIENT_FAILURE: a picker that fails requests with an error
//     matching [lb.ErrTransientFailure] and the last connection error (and
//     the resolver error, when one was reported since the last update).
//
// Every update from the parent publishes a new picker, as the
// specification asks, even when only weights changed: new weights take
// effect on the next pick. A SubConn state change publishes one only when
// the aggregate state, the READY set (while READY) or the connection error
// (while TRANSIENT_FAILURE) changed.
//
// An empty address list shuts down every SubConn, publishes
// TRANSIENT_FAILURE ("resolver produced zero addresses") and returns an
// error wrapping [lb.ErrBadResolverState].
//
// # Slow start
//
// With a slowStartConfig ([Config].SlowStart, gRFC A100's draft), an
// endpoint that becomes READY ramps (package slowstart): the weight fed to
// the EDF schedule is its weight times its slow start factor (times a
// resolution of 1000 units per unit of weight while any endpoint ramps, so
// that factors keep their precision), re-published every re-weighting
// interval until every ramp has ended.
//
// # Schedule carry-over and random start
//
// A new EDF schedule always starts with its heaviest endpoint, so a policy
// that rebuilds its schedule on every change sends the first requests after
// each change to the heaviest endpoints and starves light ones when changes
// are frequent. This policy instead builds each READY picker with
// [edf.NewFrom] from the previous one: endpoints that remain keep their
// place in the schedule, changed weights apply from the next pick, and an
// endpoint that joins (or comes back after losing its connection) joins at
// the current point. A picker that was never picked from is skipped over:
// the next one continues the schedule before it (so endpoints becoming
// READY one after the other, with no request in between, give one new
// schedule). A schedule of a single endpoint has no position to keep: after
// it, a new schedule starts.
//
// A new schedule starts at its beginning, as the specification says. With
// [Config.RandomStart] it starts at a point drawn uniformly from its period
// with the tree's random source ([lb.BuildOptions.Rand]), so that many
// clients starting together do not all send their first request to the
// same endpoint.
//
// # Resolver errors
//
// With no endpoint (before the first usable update, or after an empty one)
// or in TRANSIENT_FAILURE, a resolver error is published as
// TRANSIENT_FAILURE naming it. Otherwise the last addresses stay in force
// and the error is only remembered until the next update: it is named if
// the policy fails in the meantime.
//
// # Concurrency contract
//
// The balancer follows the contract of package lb: its methods and the
// state listeners of its SubConns and its weight update timer run
// serially on the tree's [lb.Scheduler], and the random source is used
// only there. The one lock is each endpoint's load report record's, taken
// for a few instructions by Done (on request goroutines) and by the
// weight updates; pickers never take it. Pickers are snapshots, safe for concurrent use. The READY picker
// shares with the balancer only its schedule (safe for concurrent use), the
// SubConns it returns (never changed once published) and an atomic flag its
// first Pick sets, which the balancer reads to choose the schedule to
// continue.
//
// Close shuts down every SubConn; later calls of any method do nothing,
// and state reports for SubConns the policy shut down are ignored.
//
// docs/conformance.md maps each statement of the proposal to the test that
// pins it, and docs/choices.md lists the policy's choices.
package wrr
