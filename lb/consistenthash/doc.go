// Package ringhash implements the ring_hash_experimental load-balancing
// policy of gRFC A42, as gRFC A61 and A76 update it: consistent hashing,
// so that requests with the same hash go to the same endpoint while it is
// reachable, and only about 1/n of the keys move when one of n endpoints
// comes or goes. It is what a sharded cache, per-user state or an LLM
// prefix cache needs from its client.
//
// The policy is registered under [Name] by this package's init. Its config
// is a [Config], the JSON object
//
//	{"minRingSize": 1024, "maxRingSize": 4096, "requestHashHeader": "x-user"}
//
// every field optional. [Builder.WithRingSizeCap] sets A42's client-side
// cap on both sizes (default 4096).
//
// # The ring
//
// Each endpoint (one per address: A61 ignores attributes when telling
// endpoints apart) is placed on a ring of 64-bit hashes by its hash key —
// its [SetHashKey] attribute (A76; a resolver sets it, for example from a
// StatefulSet pod's name) or else its address — with
// a number of entries proportional to its weight (the lb/weight attribute,
// 1 when unset). The ring is built exactly as Envoy's and grpc-go's are
// (XXH64 of "<key>_<i>", the same sizes and rounding), so a client moving
// between grpc-go and lbkit keeps its affinity: for the same endpoints,
// weights and request hash, both pick the same endpoint
// (adapters/grpcgo's TestRingHashPicksAsGrpcGo).
//
// # The request's hash
//
// With requestHashHeader, the hash is XXH64 of the request header's value
// (several values joined with ","), read from [lb.PickInfo.Metadata]; a
// request without the header gets a random hash, walks to the first READY
// endpoint, and asks at most one IDLE endpoint to connect (A76). Without
// it, the hash is [lb.PickInfo.Hash], which a transport computes (nethttp's
// WithRequestHash) or the caller sets (conn.PickOptions.Hash); a request
// without one fails with [ErrNoRequestHash], as A76 says.
//
// # Connections and states
//
// Connections are lazy: an endpoint is connected when a pick lands on it,
// and the pick waits. An endpoint that fails counts as TRANSIENT_FAILURE
// until it is READY again, reconnecting after each backoff by itself
// (A62's sticky failure); one that loses a READY connection goes IDLE and
// waits for the next pick. A pick skips failed endpoints to the next one on
// the ring (A61). The policy's state follows A42's six rules (READY if one
// endpoint is; TRANSIENT_FAILURE if two have failed; CONNECTING if one is
// connecting, or one of several has failed; IDLE if one is idle), and
// while it is CONNECTING or failing with nothing connecting, it connects
// one IDLE endpoint itself, so that a policy receiving no picks (a lower
// priority's) still learns when its endpoints come back (A61).
//
// # Concurrency contract
//
// The balancer's methods and its SubConns' listeners run serially on the
// tree's [lb.Scheduler]. A picker is an immutable snapshot of the ring and
// every endpoint's state, replaced on every state change (A42); Pick is
// safe for concurrent use, takes no lock, and allocates nothing when it
// returns a READY endpoint. A pick that must connect an endpoint hops onto
// the tree with [lb.Scheduler.Schedule].
//
// docs/conformance.md maps each statement of A42, A61's ring_hash section
// and A76 to the test that pins it; docs/choices.md says where lbkit
// chooses.
package consistenthash
