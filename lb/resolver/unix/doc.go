// Package unix is the resolver for Unix domain socket targets, as gRPC's
// naming document defines them:
//
//   - "unix:path" (relative or absolute) and "unix:///absolute/path":
//     the address is the socket path, "path" or "/absolute/path".
//   - "unix-abstract:name" and "unix-abstract:///name": a socket in Linux's
//     abstract namespace. The address is "@" followed by the name ("@name"
//     and "@/name" respectively), which is how package net spells an
//     abstract socket; the name has no connection with the file system.
//
// # Dialing
//
// Every published address is to be dialed with network "unix", for example
// net.Dial("unix", addr.Addr). The resolver marks each address so that a
// dialer that serves several schemes can tell: [Network] returns "unix" for
// it.
//
// # Behaviour
//
// [Builder.Build] publishes the one address once, synchronously, before it
// returns; the resolver's ResolveNow and Close do nothing. An empty path
// and a non-empty authority ("unix://host/path") are errors.
//
// # Registration
//
// Importing the package registers two builders with [resolver.Register],
// one for [Scheme] and one for [AbstractScheme]; that is its only side
// effect.
package unix
