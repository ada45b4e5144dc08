// Package weightedtarget implements the weighted_target_experimental
// load-balancing policy of gRFC A28 ("xDS traffic splitting and routing",
// https://github.com/grpc/proposal/blob/master/A28-xds-traffic-splitting-and-routing.md),
// which gRFC A56 (https://github.com/grpc/proposal/blob/master/A56-priority-lb-policy.md)
// places below priority_experimental to pick an xDS locality: given named
// targets, each a child policy with a weight, it spreads requests over the
// READY targets in proportion to their weights, and lets each target's
// policy pick within it. The package registers [Name] in its init function;
// that is its only side effect.
//
// # Configuration
//
// The config ([Config]) maps target names to a weight of at least 1 and a
// nested loadBalancingConfig list ("childPolicy"). Addresses reach targets
// by hierarchical path (package [github.com/lbkit/lbkit/lb/hierarchy]), as
// A56's "Hierarchical Addresses" describes: each target gets the addresses
// whose path starts with its name, with that element stripped. Addresses
// without a path, or whose path names no target, are dropped and logged.
//
// # Picking
//
// When any target is READY, the published picker chooses one READY target
// with the exact earliest-deadline-first scheduler of package
// [github.com/lbkit/lbkit/lb/edf] and returns that target's picker's result:
// in every run of W consecutive picks, W being the sum of the READY
// targets' weights divided by their greatest common divisor g, a READY
// target of weight w is chosen exactly w/g times. Targets that are not
// READY get nothing. The picker holds the targets' pickers; it allocates
// nothing itself, and a pick costs one atomic add and a read of a block of
// the schedule on top of the chosen target's own pick (see package edf).
// With a single READY target its own picker is published, with no wrapper.
//
// The schedule is carried across pickers: when the policy publishes a new
// picker (a child published, a weight changed, a target joined or left),
// the scheduler continues from the previous one's point ([edf.NewFrom])
// instead of restarting, where the heaviest target comes first. Restarting
// on every update would starve light targets whenever children publish
// often. A scheduler with nothing to continue (the first, or one after a
// single READY target) starts at a random point of its period, drawn from
// [lb.BuildOptions.Rand].
//
// # State
//
// The policy reports the aggregate of its targets by [lb.StateCounter]'s
// rule (READY, else CONNECTING, else IDLE, else TRANSIENT_FAILURE), where
// a target that reported TRANSIENT_FAILURE keeps counting as
// TRANSIENT_FAILURE until it reports READY (sticky), so a child cycling
// through CONNECTING while it retries does not hold the whole policy in
// CONNECTING. The pickers:
//
//   - READY: the weighted picker above;
//   - CONNECTING: requests queue ([lb.ErrNoSubConnAvailable]);
//   - IDLE: requests queue and the first pick asks every target to leave
//     IDLE;
//   - TRANSIENT_FAILURE: requests fail with an error, wrapped with
//     [lb.TransientFailureError], that names the target that failed last
//     and wraps that target's error. The policy learns a target's error by
//     calling the target's TRANSIENT_FAILURE picker once, when the target
//     publishes it, and keeps it while the failure sticks.
//   - With no target in the config: TRANSIENT_FAILURE, "no targets in the
//     config".
//
// A target that reports IDLE is asked to leave IDLE at once (through the
// tree's scheduler, not inline), since only READY targets receive requests
// and an IDLE one would otherwise lose its share for good.
//
// # Updates
//
// A parent update reaches every target before the policy publishes, once:
// states the children publish meanwhile, even inline, are recorded but not
// published, and the aggregate is published at the end even if unchanged.
// A target the config no longer names is removed at once: its policy is
// closed and its SubConns shut down. A target whose child policy changes
// name gets a new policy (the old one is closed first) and starts again as
// CONNECTING. Outside updates, the policy publishes only when what it would
// publish changed.
//
// ResolverError reaches every target (with none, the policy reports
// TRANSIENT_FAILURE with the error); ExitIdle reaches every target, because
// all of them serve requests at once; Close closes every target.
//
// docs/conformance.md maps each statement of A28 and A56 about this
// policy to the test that pins it, and docs/choices.md lists the choices
// made where the texts and the implementations differ.
//
// # Concurrency
//
// A balancer is used only inside its tree's serialized calls (see package
// lb): its methods, its children's reports and its scheduled callbacks run
// one at a time, so it takes no lock. Children may publish re-entrantly,
// from inside the calls the policy makes into them. Published pickers are
// immutable snapshots, safe for concurrent use; Pick never blocks.
package weightedtarget
