// Package demo runs demos of a channel's load balancing: steady HTTP
// traffic through a channel and the net/http adapter, a script of steps
// played against it (servers stopped, snapshots pushed), a table printed
// every second, an SVG timeline and a summary of how fast the traffic
// followed each step.
//
// cmd/lbdemo (the eds file resolver, outlier detection, failover) and
// adapters/xds/cmd/xdsdemo (snapshots pushed by an xDS control plane, in
// the xds module) are thin mains over it; a user's own demo of a resolver
// or a policy can be one too, with backends from package
// lb/lbtest/httpbackend. It is public for that: the adapter modules use
// the core module's public packages only.
//
// # Running
//
// A [Scenario] names the target, the backends (the table's columns), the
// [Topology] the traffic should follow (each backend's priority and its
// expected share) and the [Step]s of the script. [Scenario.Run] sends
// [Options.Rate] requests per second for [Options.Duration], plays the
// script, and returns a [Summary].
//
// # Timing a step
//
// A step's [Watch]es time how long after the step the traffic reflected
// it, by a [Condition] on the requests served: the first request to a
// backend ([FirstRequestTo]), the last one ([LastRequestTo]), or the
// share of a set of backends over the latest requests ([ShareReaches]).
//
// # Flags and errors
//
// [Options.ParseFlags] parses the flags every demo shares (-duration,
// -rate, -svg, -debug) beside a demo's own, and [Options.Check] validates
// them. A problem
// with the flags or the input is a [*UsageError].
package demo
