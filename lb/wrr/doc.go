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
// # The name weighted_round_robin in grpc-go
//
// grpc-go registers a different policy under the same name: gRFC A58's
// client-side weighted round robin, whose weights come from the backends'
// ORCA load reports (qps, utilization), not from the addresses. Its config
// fields (enableOobLoadReport, oobReportingPeriod, blackoutPeriod,
// weightExpirationPeriod, weightUpdatePeriod, errorUtilizationPenalty) mean
// nothing to this policy, which has no load reports: a service config
// written for grpc-go's policy parses here, its A58 fields are reported as
// unknown (logged at WARN by the channel, to slog.Default() when it was
// given no logger; refused with
// conn.WithStrictConfig), and requests are spread by the endpoints'
// configured weights, as equal shares when no address carries one. The two
// coincide when every backend reports the same load. Inside grpc-go, the
// adapters/grpcgo module registers this policy as
// lbkit_weighted_round_robin, so the two never collide there; an xDS
// ClientSideWeightedRoundRobin cluster policy is not mapped to it
// (docs/choices.md, "xDS clusters").
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
//   - READY: a picker over the READY SubConns; Pick never allocates and
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
// state listeners of its SubConns run serially on the tree's
// [lb.Scheduler]; nothing in it locks, and the random source is used only
// there. Pickers are snapshots, safe for concurrent use. The READY picker
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
