// Package passthrough is the resolver for "passthrough:///addr" targets: the
// endpoint is the one address, handed to the channel unchanged, with no name
// lookup. The channel (or its dialer) resolves the name, if any, when it
// connects.
//
// # Behaviour
//
// [Builder.Build] publishes State{Addresses: [{Addr: endpoint}]} once,
// synchronously, before it returns; the resolver's ResolveNow and Close do
// nothing. The authority, if any, is ignored, as in grpc-go. An empty
// endpoint is an error.
//
// # Registration
//
// Importing the package registers a [Builder] for [Scheme] with
// [resolver.Register]; that is its only side effect. The zero [Builder] is
// ready to use.
package passthrough
