// Package route is lbkit's model of xDS routing (gRFC A28): a route
// configuration of virtual hosts and routes, validated, and matched
// against requests.
//
// # The model
//
// [Config] is Envoy's RouteConfiguration reduced to what gRFC A28 reads:
// virtual hosts with domains; routes with a match (a path prefix, an exact
// path or a safe (RE2) regex, case sensitivity, header matchers and a
// runtime fraction) and an action (one cluster or weighted clusters, and
// a timeout). It is neutral: [Parse] reads its JSON form, through lbkit's
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
// # Concurrency
//
// A [Table] is immutable and safe for concurrent use; a [Config] is a
// plain value.
package route
