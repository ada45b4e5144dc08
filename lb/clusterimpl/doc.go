// Package clusterimpl is the xds_cluster_impl_experimental policy: what
// the management server asks of one cluster's requests, in front of the
// policy that picks its endpoints. It does two things, both at pick time:
//
//   - Drops (the EDS assignment's policy.drop_overloads, gRFC A27's "drop"
//     and Envoy's ClusterLoadAssignment.Policy): each category drops its
//     share of the requests, categories applied one after the other as the
//     proto says; a dropped pick fails, even wait-for-ready, with an error
//     naming the category ([lb.DropError]), and is counted
//     ([MetricDrops]). Drops apply only while the child is READY, as in
//     grpc-go: a request that would wait or fail anyway is not counted as
//     dropped.
//   - A circuit breaker (the CDS cluster's circuit_breakers max_requests,
//     gRFC A32): at most maxConcurrentRequests requests in flight; a pick
//     beyond fails, even wait-for-ready, with an error naming the limit,
//     and is counted ([MetricCircuitBreakerDrops]).
//
// # Config
//
//	{"cluster": "c",
//	 "maxConcurrentRequests": 1024,
//	 "dropCategories": [{"category": "throttle", "requestsPerMillion": 10000}],
//	 "childPolicy": [{"priority_experimental": {...}}]}
//
// These are grpc-go's names for its xds_cluster_impl_experimental. cluster
// names the cluster in errors and metrics. maxConcurrentRequests absent
// means no limit (grpc-go's default is 1024: lbkit's xDS resolver writes
// the limit, 1024 when the cluster sets none, so an xDS cluster is capped
// as A32 says, while a channel from an eds:/// file is not). Each category
// needs a non-empty name and at most 1,000,000 requestsPerMillion.
// childPolicy is required.
//
// # Counting
//
// The balancer owns one [Counter] of requests in flight for its life, so
// the count carries over config and picker changes (a lowered limit then
// fails new picks until enough requests end, as A32 describes). A
// resolver state carrying a Counter ([WithCounter]) replaces it: the
// balancers of every channel given that Counter share one count, as A32
// shares one per cluster in the process (adapters/xds does so for the
// channels following one cluster). A pick
// takes a place with one compare-and-swap that never lets the count pass
// the limit; the child's failing pick gives it back at once; otherwise the
// request's Done gives it back, whatever the request's outcome (also
// [lb.ErrRequestNotSent]). Done must be called at most once, as
// [lb.PickResult] says.
//
// # Randomness
//
// Drops draw from a sequence fixed by a seed from [lb.BuildOptions].Rand
// when the picker is built: one atomic add per category and pick, no lock,
// no allocation; serial picks replay exactly for a seed.
//
// # Concurrency
//
// Balancer methods run on the tree's serializer. Pick is safe for
// concurrent use, never blocks and does not allocate: the chained Done of
// a counted pick whose child has a Done comes from a sync.Pool of the
// Counter's, back in it when Done returns.
package clusterimpl
