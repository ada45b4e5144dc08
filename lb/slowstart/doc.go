// Package slowstart is the slow start of lbkit's weighted leaf policies
// (round_robin, weighted_round_robin, least_request_experimental, and any
// policy that scales endpoints by a factor): an endpoint that has just
// become READY gets a fraction of its weight that grows over a window, as
// Envoy's slow_start_config defines it and gRFC A100 (draft) adopts it.
//
// # The ramp
//
// [Config.Factor] gives the factor applied to an endpoint's weight a time
// t after its start:
//
//	time_factor = max(t, 1s) / slowStartWindow
//	factor      = max(minWeightPercent/100, time_factor^(1/aggression))
//
// and 1 from t = slowStartWindow on. A policy config carries it as the
// object "slowStartConfig" ([ParseField]).
//
// # When the ramp starts
//
// An endpoint's start is the moment it becomes READY (A100's ready_since):
// a new endpoint, and an endpoint that comes back after losing its
// connection or failing its health check, ramps again. Endpoints that
// become READY together ramp together, so their shares stay equal: slow
// start only shifts traffic between endpoints of different ages.
//
// # The tracker
//
// A [Tracker] remembers the start of each endpoint in its window, computes
// factors on the tree's injected clock, and, while any endpoint is in its
// window, calls the policy back every [Interval] on the balancer's
// scheduler so that the policy re-publishes its picker with the new
// factors. It is wired with three calls: [Tracker.Ready] when an endpoint
// becomes READY, [Tracker.Factor] (or [Tracker.Weight]) when a picker is
// built, and [Tracker.SetConfig] on each config update. Package
// lb/endpointlist makes the first and the last for the leaf policies
// built on it (its List.SlowStart), which make only the second.
//
// # Drawing by factor, and the metric
//
// Power-of-choices policies draw their candidates with a [Sampler] over
// the factors while an endpoint ramps, so that the factor decides how often
// an endpoint comes up, not only how it compares (docs/choices.md).
// [Tracker.RecordPicker] counts, per picker built, the endpoints in their
// window into the counter set by [Tracker.CountPickers]: gRFC A100's
// grpc.lb.wrr.endpoints_in_slow_start for weighted_round_robin, and
// [MetricEndpointsInSlowStart] for the other policies.
//
// # Concurrency
//
// A Tracker belongs to the balancer's serializer: every method must be
// called inside the tree's serialized calls, and its callback runs there.
// [Config] is an immutable value, safe to share.
package slowstart
