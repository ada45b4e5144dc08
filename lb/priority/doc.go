// Package priority implements the priority_experimental load-balancing
// policy of gRFC A56 (https://github.com/grpc/proposal/blob/master/A56-priority-lb-policy.md):
// given a prioritized list of child policies, it routes requests to the
// highest priority child that is usable, failing over to lower priorities
// and back. The package registers [Name] in its init function; that is its
// only side effect.
//
// # Configuration
//
// The config ([Config]) names the children, each with a nested
// loadBalancingConfig list, and lists their names by priority. Addresses
// reach children by hierarchical path (package
// [github.com/lbkit/lbkit/lb/hierarchy]): each child gets the addresses whose
// path starts with its name, with that element stripped. Addresses without a
// path, or whose path names no child, are dropped and logged.
//
// # Behaviour
//
// The policy follows A56's pseudo-code. In short:
//
//   - Children are created lazily, when the choice reaches their priority;
//     nothing below the chosen priority is created.
//   - The choice uses the first child that is READY or IDLE (deactivating
//     the existing children below it), or whose failover timer is pending
//     (deactivating nothing); else the first CONNECTING child; else the
//     last child. The chosen child's own picker is published: picking
//     through the policy costs nothing extra.
//   - A deactivated child keeps running and is destroyed after the
//     deactivation delay (15 minutes, [WithDeactivationDelay]) unless the
//     choice reaches it again first. A child the config no longer names is
//     deactivated the same way, unless [WithRetainRemovedChildren](false)
//     asks for gRFC A115's immediate removal.
//   - Each child has a failover timer (10 s, [WithFailoverTimeout]), started
//     when it is created and when it reports CONNECTING after READY or IDLE
//     more recently than TRANSIENT_FAILURE; READY, IDLE and
//     TRANSIENT_FAILURE stop it. When it fires, the child is treated as if
//     it reported TRANSIENT_FAILURE.
//   - A config update reaches every existing child before the choice runs,
//     once; states the children publish meanwhile, even inline, do not run
//     it. The chosen child's picker is then published again.
//   - The choice is idempotent: run again with no change, it publishes
//     nothing.
//   - An empty priority list reports TRANSIENT_FAILURE, "priority policy
//     has empty priority list", followed by the resolver state's reason
//     when it has one ([resolver.State.Degraded]), in the same picker.
//   - ResolverError reaches every existing child; with none, the policy
//     reports TRANSIENT_FAILURE with the error; with an empty priority
//     list, TRANSIENT_FAILURE with "priority policy has empty priority
//     list: " and the error, so picks name the reason the resolver gave.
//     ExitIdle reaches the current child only.
//
// docs/conformance.md maps each statement of A56 to the test that pins
// it, and docs/choices.md lists the choices below with their reasons.
//
// # Differences from grpc-go
//
// Where implementations differ, lbkit follows A56's text. grpc-go differs
// on these points:
//
//   - When a failover timer fires, lbkit treats the child as
//     TRANSIENT_FAILURE (as A56 and C-core do); grpc-go only runs the
//     choice again, leaving the child CONNECTING.
//   - When no child is READY, IDLE or has a pending failover timer, lbkit
//     uses the first CONNECTING child, else the last; grpc-go uses the
//     last.
//   - lbkit deactivates lower priorities only when the chosen child is
//     READY or IDLE; grpc-go also does when it chooses a child because its
//     failover timer is pending.
//   - A child the config no longer names is deactivated for 15 minutes by
//     default (A56); grpc-go and grpc-java remove it at once since gRFC
//     A115, which [WithRetainRemovedChildren](false) selects.
//   - ExitIdle reaches the current child only (as C-core); grpc-go passes
//     it to every child.
//   - The durations are builder options, not package variables.
//
// # Concurrency
//
// A balancer is used only inside its tree's serialized calls (see package
// lb): its methods, its children's state reports, and its timers run one at
// a time, so it takes no lock. Children may publish re-entrantly, from
// inside the calls the policy makes into them. The pickers it publishes are
// its children's own.
package priority
