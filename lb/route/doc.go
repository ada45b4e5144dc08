// Package route is lbkit's model of xDS routing (gRFC A28): a route
// configuration of virtual hosts and routes, validated, and matched
// against requests.
//
// # The model
//
// [Config] is Envoy's RouteConfiguration reduced to what gRFC A28 reads:
// virtual hosts with domains; routes with a match (a path prefix, an exact
// path or a safe (RE2) regex, case sensitivity, header matchers and a
// runtime fraction) and an action (one cluster or weighted clusters, a
// timeout, and gRFC A42's hash policies). It is neutral: [Parse] reads its JSON form, through lbkit's
// one config parser (so errors carry JSON paths and unknown fields are
// listed), and the xDS adapter builds it from protobuf. Both go through
// [Compile], which applies gRFC A28's rules and returns a [Table].
//
// # Matching
//
// [Table.Find] chooses the virtual host by the request's authority and
// then the first route that matches the request's path, headers and
// runtime fraction, and returns its index; it allocates nothing. The
// routing policy (package lb/routing) picks with it on every request.
//
// # Request hashes
//
// A route's hash policies ([HashPolicy], gRFC A42) say where the hash of
// a request it takes comes from, for a hash-based policy such as
// ring_hash: a header (optionally rewritten by a regex), or the channel's
// id; [Table.Hasher] returns them compiled, and [Hasher.Hash] computes a
// request's hash with XXH64, allocating nothing unless a regex rewrites
// the value. Policy kinds gRFC A42 does not support are accepted and give
// no hash.
//
// # Concurrency
//
// A [Table] is immutable and safe for concurrent use; a [Config] is a
// plain value.
package route
