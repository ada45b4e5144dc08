// Package static is the resolver for a fixed list of addresses:
// "static:///10.0.0.1:443,10.0.0.2:443,backend.internal:8080", optionally
// weighted: "static:///10.0.0.1:443=1,10.0.0.2:443=2,10.0.0.3:443=3".
//
// # Behaviour
//
// The endpoint is a comma-separated list of host:port elements. Each host
// is an IP literal (IPv6 in brackets) or a name, which the channel's dialer
// resolves when it connects; each port is a decimal number from 1 to 65535.
// [Builder.Build] publishes one address per element, in the written order,
// once, synchronously, before it returns. Duplicates are kept in order: the
// load-balancing policy de-duplicates. Ports are written back in canonical
// form, so "a:0080" is published as "a:80". The resolver's ResolveNow and
// Close do nothing.
//
// An element may end in "=weight", a whole number from 1 to 4294967295:
// the address then carries that endpoint weight ([weight.Set]), which
// weighted_round_robin spreads requests by. An element without one carries
// none (weighted_round_robin counts it as 1).
//
// # Errors
//
// An empty list, an empty element, an element without a port, a port out of
// range, a weight that is not a number from 1 to 4294967295 and an
// authority ("static://a:1/") are errors; each names the bad
// element and its zero-based index.
//
// # Registration
//
// Importing the package registers a [Builder] for [Scheme] with
// [resolver.Register]; that is its only side effect. The zero [Builder] is
// ready to use.
package static
