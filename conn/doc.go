// Package conn is lbkit's channel runtime: the part of gRFC L9 that gRPC
// itself plays ("The balancer API and the structure",
// https://github.com/grpc/proposal/blob/master/L9-go-resolver-balancer-API.md),
// for clients that are not gRPC — an HTTP client, a database driver, a
// custom TCP protocol.
//
// A [Channel] resolves its target with the resolver registered for the
// target's scheme, runs the load-balancing policy the service config names
// (pick_first by default) on one [lb.Serializer], manages connections
// ([SubConn]s) with gRPC's connection backoff, and answers [Channel.Pick]
// with a READY connection's address.
//
// # Lifecycle
//
// A new Channel is IDLE: it starts its resolver and balancer on the first
// Pick or [Channel.Connect]. After [WithIdleTimeout] with no pick (30
// minutes by default, gRFC A62) it closes them again and returns to IDLE.
// [Channel.Close] ends everything; no goroutine of the channel outlives it.
//
// # Picking
//
// Pick is lock-free and allocation-free when a READY picker exists. When the
// policy has no connection ready it waits for the next picker; a transient
// failure fails the pick at once unless it is wait-for-ready; a drop fails
// it always; see [lb.ClassifyPickError]. When the context ends, the error
// names the last picker error.
//
// # Balancer switch
//
// When the service config names another policy, the new balancer is built
// beside the old one. Connections to the same address are shared, not
// redialled. The old picker stays in use until the new balancer leaves
// CONNECTING or the old one leaves READY; then the old balancer is closed
// and connections only it used are shut down.
//
// # Connections
//
// A SubConn is IDLE until Connect; CONNECTING while dialling its addresses
// in order; READY on success; on failure TRANSIENT_FAILURE for the backoff
// period (gRPC's connection-backoff schedule with a 10 s cap: 1 s, ×1.6,
// jitter 0.2, at most 10 s, each attempt given at least 20 s), then IDLE,
// or sooner when health checking is on and a probe, sent every health-check
// interval while the connection backs off, passes; a lost connection goes
// IDLE.
// The transport is a [Dialer]. The default, [TCPDialer], checks that a TCP
// connection (or a Unix socket's, for an address starting with "/" or
// "@") can be made, and closes it at once: the SubConn is then READY until
// a request reports a failure ([SubConn.ReportError], which the net/http
// adapter calls when a backend cannot be reached) or a health check fails.
// Nothing is held per endpoint. TCPDialer.TLS makes the check a TLS
// handshake; TCPDialer.Hold keeps the connection open to notice its loss
// without a request.
package conn
