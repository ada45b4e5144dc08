// Package leastrequest implements the least_request_experimental
// load-balancing policy of gRFC A48: each request samples choiceCount READY
// endpoints at random (with replacement) and goes to the one with the fewest
// outstanding requests, so a slow endpoint, whose requests pile up, gets
// fewer new ones.
//
// The policy is registered under [Name] by this package's init. Build it
// through the registry ([lb.Get]) or directly with [Builder]; its config is
// a [Config], the JSON object {"choiceCount": n} (default 2, at least 2, at
// most 10 in effect).
//
// # Endpoints and states
//
// As A48 asks, SubConn management and the aggregate state are round_robin's
// (package endpointlist): one SubConn per endpoint (addresses equal but for
// their weight attribute are one endpoint; duplicates add no weight),
// connected at once and again whenever it reports IDLE, with a re-resolution
// request when one reports TRANSIENT_FAILURE or loses its READY connection;
// the state is READY if any SubConn is READY, else CONNECTING if any is
// CONNECTING or IDLE, else TRANSIENT_FAILURE, where a SubConn that reported
// TRANSIENT_FAILURE counts as failed until it is READY again. An empty
// address list publishes TRANSIENT_FAILURE and returns an error wrapping
// [lb.ErrBadResolverState].
//
// # Outstanding requests
//
// Each endpoint has an atomic counter of outstanding requests, owned by the
// policy's record of the endpoint: it lives as long as the endpoint's
// SubConn, across pickers, and is local to this policy instance. Pick
// increments the chosen endpoint's counter; the PickResult's Done, which
// the channel calls exactly once when the request ends (whatever its
// outcome), decrements it.
//
// Endpoint weights are ignored, as gRPC ignores them for this policy: A48
// supports only Envoy's "all weights equal" algorithm. docs/choices.md
// says why.
//
// # Picker
//
// The READY picker holds the READY SubConns in update order. Pick samples
// choiceCount of them uniformly and returns the first sampled with the
// fewest outstanding requests, A48's pseudo-code. Its random numbers come
// from a wyrand sequence seeded, when the picker is built, from the tree's
// random source ([lb.BuildOptions.Rand], which is not safe for concurrent
// use); one atomic add per pick claims its numbers. Picks that do not
// overlap take the sequence from the seed in order, so a seeded tree
// reproduces its serial picks; picks that contend spread over 16 segments
// of the sequence, so that cores seldom write the same cache line. Pick
// takes no lock and never allocates.
//
// # Slow start
//
// With a slowStartConfig ([Config].SlowStart; package slowstart), an
// endpoint that becomes READY ramps: while any endpoint is in its window,
// a pick compares the sampled endpoints by (outstanding+1)/factor instead
// of their outstanding count, which is Envoy's weighted least request
// score, weight/(outstanding+1)^active_request_bias, with bias 1 and the
// slow start factor as the weight; and it draws the candidates in
// proportion to their factors (package slowstart's Sampler), so that a
// cold endpoint is not drawn twice, and picked, as often as a warm one.
// docs/choices.md says why.
//
// # Concurrency contract
//
// The balancer's methods and its SubConns' listeners run serially on the
// tree's [lb.Scheduler]. Pickers are safe for concurrent use; they share
// with the balancer only the endpoints' counters (atomic) and SubConns
// (never changed once published). Counters are read without
// synchronization between them, so concurrent picks may see slightly stale
// counts: A48 accepts this raciness rather than limit picker concurrency.
//
// docs/conformance.md maps each statement of A48 to the test that pins it,
// and docs/choices.md lists the policy's choices.
package leastrequest
