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
// # Choosing the parameters
//
// Envoy gives slowStartWindow no default: it is the backend's warm-up,
// which only its operator sees. The defaults of the other two stay Envoy's
// and A100's (aggression 1, a 10% floor; docs/choices.md says why). To fit
// all three to a warm-up (docs/simulation.md derives the rule and
// measures it, "S3 with slow start fitted to its warm-up"), describe the
// warm-up by a step that bounds it: the backend serves at most s times
// slower (1/s of its capacity) until T after it starts (its process, before
// it accepts connections), and no client sees it READY before d after it
// starts. A warm-up that improves gradually is bounded by its worst
// slowness and the time it ends.
//
//  1. slowStartWindow = T, counted from the backend's start, not from
//     READY: the ramp starts at READY, at least d later, so it ends at
//     least d after the warm-up, never before. Not longer: a backend kept
//     below its share once warm pushes its load onto its peers, which in a
//     rolling restart are the next batch's.
//  2. aggression = ln(T/(T-d)) / ln(s), rounded down: the factor stays
//     below 1/s, the share of a peer's load the backend can serve, until
//     the warm-up ends (T-d after the earliest READY), then rises to 1 over
//     the last d. A linear ramp (aggression 1) passes 1/s at T/s. With
//     backends READY at once, take d = T/10.
//  3. minWeightPercent, what the backend carries meanwhile. With k of n
//     backends warming at once (a rolling restart's batch), its request
//     rate over a warm peer's, ρ, should be at most 1/s (its capacity); at
//     most P(n-k)/(k(1-P)) for a tail target, P being the share of
//     requests that may meet a warming backend (1% over the chance that a
//     slow answer misses a p99 target: about 2% when it misses half the
//     time); and, to keep max/avg requests in flight across backends at
//     most r, at least (n/r - (n-k))/(k·s) (the warm ones carry
//     n/(n-k+k·s·ρ) times the mean; no bound when k/n < 1-1/r; leave room
//     for the measure's noise). round_robin and weighted_round_robin send
//     factor × a peer's requests: take ρ in that band as the floor.
//     least_request_experimental and peak_ewma_experimental, which weigh
//     the factor against the load they see, send at most factor/s × a
//     peer's to an s× slower backend: take the largest floor the upper
//     bounds allow, min(1/s, s·P(n-k)/(k(1-P))).
//
// A rolling restart of 20 backends, 5 at a time, each 5× slower for 30 s
// after it starts and READY no sooner than 2 s after (lbsim's S3), gives
// a 30 s window, aggression 0.042 (ln(15/14)/ln 5 = 0.0429), and a floor
// of 5% for round_robin (its band, for p99 at most 1.5× and in-flight
// max/avg at most 1.3 less 5% of noise, is 4.6% to 5.5%) or 20% for
// least_request and peak_ewma. In the simulator those meet issue 27's
// three figures where the defaults do not (docs/simulation.md).
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
