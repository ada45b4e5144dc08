// Package lbtest is a harness for testing load-balancing policies, lbkit's
// own and yours: a fake [ClientConn] that records every call in order, fake
// [SubConn]s whose state a test sets, and a [Harness] that runs the policy on
// a real [lb.Serializer] with a mock clock.
//
// # Determinism
//
// Every call the harness makes into the balancer goes through the
// serializer and waits for it, so when [Harness.UpdateClientConnState],
// [SubConn.UpdateState] or [Harness.Advance] returns, everything the policy
// did in response has been recorded. [Harness.Advance] moves the mock clock
// one timer deadline at a time and waits, at each deadline, until the timer
// callbacks and all their consequences have run: a test never sleeps.
//
// Timers must be made with the [lb.Scheduler] in [lb.BuildOptions]
// (opts.Scheduler.AfterFunc); a policy that calls opts.Clock.AfterFunc
// directly still fires on the mock clock but the harness cannot wait for it.
//
// # Closing
//
// [Harness.Build] gives the balancer a scope of its own ([lb.Scope]), as a
// parent does, and [Harness.CloseBalancer] closes it the way a parent
// does: the scope first, then Close. Afterwards nothing of the balancer
// runs and the harness's calls into it do nothing, so a test of "calls
// after Close" tests what every parent guarantees.
//
// # Parent policies
//
// [NewParent] runs a parent policy (one that builds children from policy
// lists in its config) over test children: the leaf of [NewLeafBuilder]
// and the script child of [NewScriptBuilder], whose states the test sets.
// They live in a registry of the test's own ([NewRegistry]), never in
// [lb.DefaultRegistry], so tests that use them may run in parallel.
//
// # Logs
//
// [Logs] is a slog.Handler that keeps every record as its text line, for
// tests that check what was logged or wait for a line.
//
// # Events
//
// Recorded events are kept in unbounded queues ([Queue]) that never drop:
// a test reads them in order, or looks at [ClientConn.Events] for the whole
// history across kinds.
package lbtest

// TB is the part of testing.TB the harness uses; *testing.T and *testing.B
// satisfy it.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}
