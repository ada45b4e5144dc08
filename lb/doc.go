// Package lb is lbkit's load-balancing API, in the shape of gRFC L9
// ("Resolver and balancer API changes",
// https://github.com/grpc/proposal/blob/master/L9-go-resolver-balancer-API.md)
// as grpc-go refined it: a [Balancer] receives resolver updates and creates
// [SubConn]s through its [ClientConn]; it hears each SubConn's state through
// the listener given at creation, aggregates the states, and publishes a
// [Picker] that the channel calls for every request.
//
// # Concurrency contract
//
// One balancer tree is a top-level [Balancer] and every child it builds.
//
//   - All Balancer methods, all SubConn state listeners and all callbacks of
//     timers made with [Scheduler.AfterFunc] for one tree run one at a time,
//     never concurrently. A [Serializer] gives this guarantee; the channel
//     runtime and the test harness (package lbtest) both use it.
//   - Inside those calls a balancer may call its [ClientConn] (NewSubConn,
//     UpdateState, ResolveNow) and [SubConn] methods; they do not block on
//     the serializer and so never deadlock.
//   - [Picker.Pick] is called from many goroutines at once, concurrently
//     with everything above. It must never block and should not allocate on
//     the path that returns a READY SubConn. A picker is an immutable
//     snapshot: a balancer publishes a new one rather than changing one in
//     use.
//   - A picker that needs the balancer to act (for example to leave IDLE)
//     hops onto the tree with [Scheduler.Schedule]; it never calls a
//     Balancer method directly.
//   - Nothing of a balancer runs after its Close. Each balancer runs on a
//     [Scope] of its own (its [BuildOptions].Scheduler), made from its
//     parent's scope and given to it with the scope's ClientConn. The
//     parent closes the scope before calling Close; from then on no hop or
//     timer callback of the balancer or of its descendants runs, even one
//     already queued, and its ClientConn calls and its SubConns' states are
//     dropped. The guarantee is built in once, so policies keep no closed
//     flag and their callbacks never ask whether they were closed.
//
// # Errors from Pick
//
// A Pick error tells the channel what to do with the request, see
// [ClassifyPickError]:
//
//   - [ErrNoSubConnAvailable]: queue the request until the next picker.
//   - [ErrTransientFailure] (wrap with [TransientFailureError]) and any error
//     not listed here: fail the request, unless it is wait-for-ready, in
//     which case queue it.
//   - [ErrDropped] (wrap with [DropError]): fail the request, even a
//     wait-for-ready one.
//
// # Registry and configuration
//
// Policies register a [Builder] by name with [Register]. A service config's
// loadBalancingConfig list is parsed with [ParseLoadBalancingConfig], and a
// nested child policy list with [ParsePolicyList]; both follow gRPC's rules
// (first registered entry wins, its config must be valid) and report every
// error as a [*ConfigError] naming the JSON path. A policy that takes a
// config implements [ConfigParser], whose one method returns the config
// and the fields it does not know; [ParseConfigWith] and [ConfigObject] do
// the reading. [ParseConfig] is how every caller parses one policy's
// config, whatever its builder offers.
//
// # Time and randomness
//
// Policies never read the wall clock: time comes in [BuildOptions], so a
// test can drive 15 minutes of timers in a microsecond. Every random choice
// that decides where a request goes (a shuffle, least_request's two
// candidates) comes from the seeded source in BuildOptions, so it replays
// from a seed. One use of the runtime's global generator remains, and
// decides nothing a test can observe from one goroutine: when picks contend,
// least_request's picker spreads them over several cursors chosen by
// math/rand/v2's per-thread generator (its order then depends on the
// goroutines' interleaving anyway).
package lb
