// Package pickfirst implements gRPC's pick_first load-balancing policy with
// sticky TRANSIENT_FAILURE and address-list shuffling, as gRFC A62 ("pick_first:
// sticky TRANSIENT_FAILURE and address order randomization") describes.
//
// pick_first is registered under [Name] by this package's init, and it is the
// policy a channel uses when its service config names none. Build it through
// the registry ([lb.Get]) or directly with [Builder].
//
// # Behaviour
//
// The policy keeps one [lb.SubConn] per distinct address (addresses equal
// with == are merged, the first occurrence keeping its place) and sends every
// request to one of them:
//
//   - A pass connects to the addresses one at a time, in list order. The next
//     address is tried when the current one reports TRANSIENT_FAILURE; an
//     address whose SubConn is already in TRANSIENT_FAILURE (backing off)
//     when the pass reaches it is skipped at once. SubConns are created as
//     the pass reaches their address.
//   - The first SubConn to report READY wins: every other SubConn is shut
//     down and the policy reports READY with a picker that always returns
//     the winner.
//   - When every address has failed once, the policy reports
//     TRANSIENT_FAILURE with the last connection error, asks for
//     re-resolution, and then reconnects each SubConn as soon as it returns to
//     IDLE after its backoff, indefinitely. It stays in TRANSIENT_FAILURE
//     ("sticky") until a SubConn is READY: it never reports CONNECTING or IDLE
//     in between, not even across address updates. The picker's error is
//     refreshed, with another re-resolution request, once per N failures,
//     N being the number of SubConns.
//   - When the READY connection is lost, the policy reports IDLE and asks for
//     re-resolution. The IDLE picker queues requests and, on its first pick,
//     asks the policy to leave IDLE; [lb.Balancer.ExitIdle] does the same.
//     Leaving IDLE reports CONNECTING at once and starts a pass from the
//     first address.
//
// # Address updates
//
// An update that still contains the READY address changes nothing visible:
// no SubConn is created and no state is reported. Any other non-empty update
// shuts down the SubConns of addresses that are gone, keeps the others, and
// starts a new pass from the first address, reporting CONNECTING (or staying
// in TRANSIENT_FAILURE if the policy was there because connections failed).
// While IDLE, an update only drops the SubConns of removed addresses; the
// pass starts when the policy leaves IDLE.
//
// An empty update shuts down every SubConn, reports TRANSIENT_FAILURE
// ("produced zero addresses") and returns an error wrapping
// [lb.ErrBadResolverState]. That failure is not sticky: the next good update
// reports CONNECTING.
//
// With [Config.ShuffleAddressList] set, every update's de-duplicated list is
// shuffled with the tree's random source ([lb.BuildOptions.Rand]) before use,
// so a seeded source gives a reproducible order.
//
// # Resolver errors
//
// Before any usable address has arrived (or after an empty update), a
// resolver error is reported as TRANSIENT_FAILURE. Otherwise it is ignored,
// unless the policy is in TRANSIENT_FAILURE, where the picker's error is
// refreshed to name it (together with the last connection error).
//
// # Concurrency contract
//
// The balancer follows the contract of package lb: its methods, the state
// listeners of its SubConns and its picker hops run serially on the tree's
// [lb.Scheduler]; nothing in it locks. Pickers are immutable and safe for
// concurrent use. The READY picker returns a result prepared in advance and
// never allocates or blocks. The IDLE picker schedules one ExitIdle per
// picker (an atomic guard) and queues the request.
//
// After Close every SubConn has been shut down, and nothing calls the
// balancer again (its scope ends, see [lb.Scope]); listener calls for
// SubConns the policy shut down earlier are ignored.
//
// # Conformance
//
// docs/conformance.md maps each statement of gRFC A62 to the tests that
// pin it, and docs/choices.md records where the package follows grpc-go or
// C-core and why.
package pickfirst
