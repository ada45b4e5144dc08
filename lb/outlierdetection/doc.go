// Package outlierdetection implements the outlier_detection_experimental
// load-balancing policy of gRFC A50 ("gRPC xDS Outlier Detection Support",
// https://github.com/grpc/proposal/blob/master/A50-xds-outlier-detection.md):
// a parent policy with one child that watches how the requests it sends to
// each address end and ejects addresses that fail more than their peers
// (success rate) or more than a threshold (failure percentage).
//
// # How it works
//
// The policy keeps an entry per address of its latest address list (keyed
// by Addr, attributes ignored) with a two-bucket call counter. Every
// SubConn the child creates is wrapped: the child's picker returns the
// wrapper, and the policy's picker hands the channel the real SubConn and a
// Done that counts the request's outcome ([lb.DoneInfo].Err: nil is a
// success) for the wrapper's address. Every Config.Interval a sweep swaps
// the counters' buckets, runs the configured algorithms on the last
// interval's counts, and returns addresses to service whose ejection time
// (base ejection time × the number of ejections in a row, capped by the max
// ejection time) is over. An ejected address's wrappers report
// TRANSIENT_FAILURE to the child, which stops picking them; the connections
// stay up, so an address that returns is usable at once.
//
// With neither algorithm configured, nothing is counted, no timer runs and
// every address is in service.
//
// # Determinism
//
// The sweep timer runs on the tree's [lb.Scheduler] and clock, and the
// enforcement draws (a number in [0, 100) below enforcementPercentage
// ejects) come from [lb.BuildOptions].Rand, so a seed and a mock clock
// replay every ejection. Sweeps visit addresses in the order of the latest
// address list.
//
// # Concurrency
//
// Balancer methods, SubConn listeners and the sweep run inside the tree's
// serialized calls and lock nothing. Pickers are called from any goroutine:
// a pick adds one type assertion to the child's pick and, when the child's
// result has no Done of its own, allocates nothing; the Done it returns
// counts with one atomic add.
//
// docs/conformance.md maps each statement of A50 to its test, and
// docs/choices.md says where lbkit chose between readings.
package outlierdetection
