// Package roundrobin implements gRPC's round_robin load-balancing policy:
// requests go to the READY endpoints in turn, each new picker starting at a
// random index, and endpoint weights are ignored. Service configs written for
// grpc-go ({"round_robin": {}}) work unchanged.
//
// The policy is registered under [Name] by this package's init. Build it
// through the registry ([lb.Get]) or directly with [Builder]. gRPC's
// round_robin takes no config; lbkit's takes one optional field,
// slowStartConfig ([Config]), and ignores the rest.
//
// # Endpoints and states
//
// The endpoint list, SubConns and states are package endpointlist's: one
// SubConn per endpoint (addresses equal but for their weight attribute are
// one endpoint, the first gives its place), connected at once and again
// whenever it reports IDLE; the policy's state is the aggregate of its
// SubConns, IDLE counting as CONNECTING and TRANSIENT_FAILURE sticky until
// READY (gRFC A61). A SubConn that reports TRANSIENT_FAILURE or loses its
// READY connection also asks the parent to re-resolve
// ([lb.ClientConn.ResolveNow]). An empty address list publishes
// TRANSIENT_FAILURE and returns an error wrapping [lb.ErrBadResolverState].
//
// # Picker
//
// The READY picker holds the READY SubConns in update order and starts at an
// index drawn uniformly with the tree's random source
// ([lb.BuildOptions.Rand]), so that clients starting together, and a picker
// rebuilt after every change, do not all send their next request to the
// first endpoint. Pick is one atomic add: lock-free, allocation-free.
//
// # Slow start
//
// With a slowStartConfig, an endpoint that becomes READY ramps (package
// slowstart): while any endpoint is in its window, the READY picker is an
// exact EDF schedule (package edf) over the endpoints' factors, each
// endpoint's base weight being 1, re-published every re-weighting
// interval and continued from the previous schedule, not restarted. When
// no endpoint ramps any more, the picker is the rotation again.
//
// # Concurrency contract
//
// The balancer's methods and its SubConns' listeners run serially on the
// tree's [lb.Scheduler]; the random source is used only there. Pickers are
// immutable snapshots apart from their atomic position, safe for concurrent
// use.
package roundrobin
