// Package sim is a discrete-event simulator that runs lbkit's policies
// against a simulated fleet in virtual time and measures what they do to
// requests: latency percentiles, success within the timeout, the load each
// backend gets. [ParseScenario] reads a scenario (docs/simulation.md
// describes the file), [Run] runs it once per policy it names, and
// [WriteSVG] draws the [Report]. The command is cmd/lbsim.
//
// # What runs, and what is simulated
//
// The policies are lbkit's own, built from [lb.DefaultRegistry] through a
// service config's loadBalancingConfig, as a channel builds them; their
// pickers choose every request's backend, their timers run as events of the
// simulator, and each request's Done reports its outcome (outlier detection
// counts it). Each connection runs the channel's own state machine,
// package lb/connstate, as package conn does: connecting, backoff, the
// attempt's timeout and gRFC A17 health checks, on the simulator's
// scheduler. The simulator is each tree's [lb.ClientConn], makes its
// [lb.SubConn]s and is its [lb.Scheduler]; only I/O is simulated: what a
// dial or a health check finds, the requests on the wire, the backends,
// their faults and the resolver's addresses.
//
// # Determinism
//
// A run is single-threaded: one heap of events ordered by virtual time and
// then by the order they were made, and random numbers from PCG streams of
// the scenario's seed. One scenario and one seed give the same [Report],
// byte for byte in JSON, on every run and at any GOMAXPROCS. A policy that
// waits on its clock instead of making timers with its [lb.Scheduler]
// stops the run with an error.
//
// # Memory
//
// Latencies go into log-linear histograms (package sim/hist), requests are
// reused: memory grows with backends, clients and requests in flight, not
// with the number of requests. Scenarios beyond the bounds are refused.
package sim
