// Package dns is the resolver for "dns:[//authority/]host[:port]" targets,
// the default scheme of gRPC's naming document. It looks up the host's A and
// AAAA records and publishes one address per IP, each joined with the port
// by [net.JoinHostPort].
//
// # Targets
//
//   - The port defaults to 443 ([DefaultPort], see [WithDefaultPort]); when
//     given it must be a decimal number from 1 to 65535. "host:" (a colon
//     with no port) is an error.
//   - An IPv6 literal is written in brackets when a port follows
//     ("dns:[::1]:8080"); a bare literal ("dns:::1") takes the default port.
//   - An empty host (":8080") means "localhost", as in net.Dial and grpc-go.
//   - An IP literal host is published at once, without a lookup, and never
//     changes.
//   - The authority, if any, names the DNS server to ask, "host[:port]"
//     with port 53 by default: "dns://127.0.0.1:5353/example.com:443". The
//     lookup then uses a pure-Go [net.Resolver] (PreferGo) whose every query
//     is sent to that server. Without an authority the lookup uses
//     [net.DefaultResolver].
//
// # Timing
//
// All timers run on [resolver.BuildOptions].Clock.
//
//   - The first resolution starts as soon as Build returns.
//   - After a successful resolution the resolver resolves again when the
//     poll interval ([DefaultPollInterval], 30 s, see [WithPollInterval])
//     has passed since that resolution started, or sooner on ResolveNow
//     (the channel's policies call it when a READY connection is lost),
//     but never sooner than the floor, the minimum interval
//     ([DefaultMinResolutionInterval], 30 s, see
//     [WithMinResolutionInterval]), after the start of the previous one.
//     A poll interval below the floor is refused by [NewBuilder]. ResolveNow
//     calls made while a resolution is pending or waiting for the floor
//     coalesce into the one resolution that follows; ResolveNow never
//     blocks.
//   - Every resolution that succeeds is published, changed or not.
//   - A failed resolution (a lookup error, a timeout, no addresses, or the
//     channel rejecting the update) is retried with exponential backoff
//     ([backoff.Default]: 1 s, ×1.6 per failure, at most 120 s, ±20 %
//     jitter; see [WithBackoff]) without waiting for ResolveNow. Retries
//     after a failure are not held to the minimum interval. A success
//     resets the backoff.
//   - Each lookup is cancelled after [DefaultLookupTimeout] (30 s, see
//     [WithLookupTimeout]). Against a DNS server named by the authority
//     the cancellation closes the lookup's sockets, so it ends the lookup
//     at once; the system's resolver may finish its own retries first.
//
// # Errors
//
// A lookup failure (an error, a timeout, a reply that cannot be read) or an
// empty answer (an error wrapping [resolver.ErrNoAddresses], or the
// resolver's "no such host") is reported with the ClientConn's
// ReportError, never as an empty update; the channel keeps the last good
// addresses. The resolver is a [resolver.Describer]: its Description,
// shown in the channel's snapshot and debug page, names the host, the DNS
// server, the poll interval and the floor, counts the addresses published
// last, and, while a failure stands, says why in LastError, with "keeping
// the last good addresses". The target itself is checked by
// [Builder.ValidateTarget], which [resolver.ParseTarget] calls.
//
// # Lifecycle and concurrency
//
// A resolver of a host name runs one goroutine, which alone calls the
// ClientConn, and runs each lookup on a goroutine of its own. Close cancels
// the lookup in flight (through its context), stops every timer and waits
// for the first goroutine, never for the lookup: a [LookupFunc] that
// ignores its context is left to finish by itself and its result is
// dropped. So Close returns promptly, and no call to the ClientConn happens
// after it returns. Close must therefore not be called from inside the
// ClientConn's UpdateState or ReportError. ResolveNow and Close are safe
// for concurrent use; Close may be called more than once.
//
// # Not supported
//
// Service config from TXT records (gRPC's "grpc_config") and SRV records
// for grpclb are out of scope: published states carry addresses only, with
// a nil ServiceConfig. Record TTLs are not honoured: Go's [net.Resolver],
// which does the lookups, does not return them, so the poll interval
// stands in for them; set it to the TTL your DNS records carry.
//
// # Registration
//
// Importing the package registers the zero Builder (the defaults) for [Scheme] with
// [resolver.Register]; that is its only side effect. Build a [Builder] with
// options ([NewBuilder]) to use other settings or a stubbed lookup
// ([WithLookup]).
package dns
