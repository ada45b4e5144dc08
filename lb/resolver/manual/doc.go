// Package manual is a resolver whose updates are pushed by a program: by
// tests that drive a channel, and by users who learn addresses some other
// way.
//
// # Use
//
// Create a [Builder] with [NewBuilder] under a scheme of your choosing,
// hand it to the channel (or register it with [resolver.Register]), and
// push complete states with [Builder.UpdateState] and failures with
// [Builder.ReportError]:
//
//	b := manual.NewBuilder("test", manual.WithInitialState(resolver.State{
//		Addresses: []resolver.Address{{Addr: "10.0.0.1:443"}},
//	}))
//	resolver.Register(b)
//	// dial "test:///anything", then later:
//	err := b.UpdateState(resolver.State{Addresses: newAddrs})
//
// # Lifecycle
//
// The Builder keeps the latest state at all times. Build attaches a new
// resolver and delivers that state to it at once, so a state pushed before
// the channel starts is not lost. One resolver is attached at a time: a
// second Build detaches the first, which then receives nothing more. While
// no resolver is attached, UpdateState keeps the state and returns nil
// before the first Build and an error wrapping [ErrClosed] after the
// attached resolver was closed; ReportError keeps the error, and the next
// Build reports it after the state, unless a newer state supersedes it.
//
// # Concurrency
//
// Every method of [Builder] is safe for concurrent use. Calls into the
// ClientConn are made under the builder's lock, one at a time, so the
// ClientConn's last state is always the Builder's latest. Do not call
// UpdateState, ReportError, Build or the resolver's Close from inside the
// ClientConn's methods: they wait for the delivery in progress and would
// deadlock. The ResolveNow hook ([WithResolveNowFunc]) runs inside the
// channel's call to ResolveNow; push from a new goroutine.
//
// # Registration
//
// Unlike the other resolver packages, importing manual registers nothing: a
// registered manual builder would be process-wide mutable state shared by
// every channel and every test. Register your own under a scheme of your
// choosing.
package manual
