// Package peakewma implements the peak_ewma_experimental load-balancing
// policy: power of two choices by the peak-EWMA cost of Finagle, Linkerd
// and tower. Each request samples two distinct READY endpoints at random
// and goes to the one whose round-trip estimate times (requests in flight
// + 1) is lower, so that a slow endpoint, or a busy one, gets fewer new
// requests, and an idle one is tried again as its estimate decays.
//
// The policy is registered under [Name] by this package's init. Build it
// through the registry ([lb.Get]) or directly with [Builder]; its config is
// a [Config], the JSON object {"decayTime": "10s", "defaultRtt": "0.010s",
// "failurePenalty": "1s", "slowStartConfig": {"slowStartWindow": "30s"}}
// (every field optional).
//
// # The estimate
//
// Each endpoint has a round-trip estimate, measured from each Pick to its
// Done on the tree's clock ([lb.BuildOptions.Clock]): a sample above the
// estimate (decayed to now) replaces it, the peak; a sample below is
// blended in with the weight 1-exp(-Δ/τ), Δ the time since the last
// sample and τ the decay time; between samples the estimate decays toward
// zero, by e every τ. A failed request (DoneInfo.Err set) adds the failure
// penalty to its sample. A pick the channel discarded before sending
// ([lb.ErrRequestNotSent]) is counted down without a sample.
//
// A pick's cost for an endpoint is its decayed estimate times (requests in
// flight + 1). While requests are in flight, the estimate used is at least
// the stall, the age of the oldest of them (to a tick of about 1 ms), so
// an endpoint that stopped answering costs more before its first slow
// answer arrives.
//
// A new endpoint starts from the median of the other endpoints' decayed
// estimates, or from the config's defaultRtt when there is none, so that
// it is neither flooded nor starved.
//
// # Slow start
//
// With a slowStartConfig (package slowstart: window, aggression, minimum
// weight percent, as Envoy's slow_start_config and gRFC A100 define
// them), an endpoint that becomes READY ramps over the window: while it
// does, a pick divides its cost by its factor in (0, 1], as Envoy's least
// request divides by an endpoint's effective weight, so a cold endpoint
// draws about factor times the requests in flight of a warm one at equal
// latency; and the two candidates are drawn in proportion to their
// factors (package slowstart's Sampler), so that two cold endpoints come
// up together, and one is picked whatever its cost, only as often as
// their factors say. The factors are taken when a picker is built, and the policy
// rebuilds its picker at each of the tracker's ticks; once no endpoint
// ramps, the picker draws uniformly and compares the plain costs.
//
// # Endpoints and states
//
// SubConn management and the aggregate state are round_robin's (package
// endpointlist), as for least_request_experimental. Endpoint weights are
// ignored.
//
// # Picker
//
// The READY picker holds the READY endpoints in update order. Its random
// numbers come from a wyrand sequence seeded, when the picker is built,
// from the tree's random source; one atomic add per pick claims a number,
// so a seeded tree reproduces its serial picks. Pick reads the clock once
// and Done once; neither takes a lock. A request's start time is kept in
// a slot of its endpoint, claimed by setting the slot's bit in one atomic
// word (which also counts the request) and whose Done is made with the
// slot: Pick allocates only when an endpoint's requests in flight reach a
// new maximum (16 slots at a time, 64 at most; a request beyond them is
// counted but not measured). A pick and its Done cost four atomic
// read-modify-writes; a pick that finds its endpoint idle also stores the
// time, once per tick of about 1 ms, and a pick beside requests in flight
// stores it in its slot. The stall is read in one load: the releases keep
// the oldest request's time, from the slots still held. The decay weight exp(-Δ/τ) of an
// estimate read or updated within about 17 s of its last update comes
// from two tables made when the decay time is set, not from math.Exp
// (within 4·10⁻¹⁴ of it).
//
// # Concurrency contract
//
// The balancer's methods and its SubConns' listeners run serially on the
// tree's [lb.Scheduler]. Pickers and Done are safe for concurrent use; they
// share with the balancer only the endpoints' atomic state. Concurrent
// picks may see slightly stale costs.
//
// docs/conformance.md maps the reference behaviour (Finagle, Linkerd,
// tower) to the tests that pin it, and docs/choices.md lists the policy's
// choices.
package peakewma
