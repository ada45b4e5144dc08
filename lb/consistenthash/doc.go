// Package consistenthash implements consistent-hashing load balancing:
// requests with the same hash go to the same endpoint while it is
// reachable, and only about 1/n of the keys move when one of n endpoints
// comes or goes. It is what a sharded cache, per-user state or an LLM
// prefix cache needs from its client. Two policies are registered by this
// package's init:
//
//   - [RingHashName] ("ring_hash_experimental"): gRFC A42, as A61 and A76
//     update it. Its config is a [RingHashConfig],
//     {"minRingSize": 1024, "maxRingSize": 4096, "requestHashHeader": "x-user"}
//     or {"entriesPerWeight": 100, "maxRingSize": 100000, ...},
//     every field optional; [RingHashBuilder.WithRingSizeCap] sets A42's
//     client-side cap on both sizes (default 4096);
//   - [MaglevName] ("maglev_experimental"): the same policy over Maglev's
//     lookup table (Envoy's MAGLEV), a [MaglevConfig],
//     {"tableSize": 65537, "requestHashHeader": "x-user"}: an even spread
//     and a lookup that is one modulo, for a little more movement when
//     endpoints change.
//
// Both take "hashBalanceFactor" (Envoy's hash_balance_factor), which bounds
// each endpoint's requests in flight; see [RingHashConfig.HashBalanceFactor].
//
// # The table
//
// Each endpoint (one per address: A61 ignores attributes when telling
// endpoints apart) has a hash key — its lb/hashkey attribute (A76; the eds
// and xds resolvers set it from the endpoint's "envoy.lb" hash_key
// metadata) or else its address — and a weight (the lb/weight attribute,
// 1 when unset).
//
// ring_hash places each endpoint on a ring of 64-bit hashes with a number
// of entries proportional to its weight, built exactly as Envoy's and
// grpc-go's rings are (XXH64 of "<key>_<i>", the same sizes and rounding),
// so a client moving between grpc-go and lbkit keeps its affinity: for the
// same endpoints, weights and request hash, both pick the same endpoint
// (adapters/grpcgo's TestRingHashMatchesGrpcGoForEveryKey and
// TestRingHashPicksAsGrpcGo). A request goes to the first entry at or
// after its hash. With weights far apart and the default 4,096 entries, the
// lightest endpoints may get no entry at all, as in grpc-go: raise
// maxRingSize (and the cap) if they must.
//
// A42's ring gives each endpoint about minRingSize × its share of the
// weight, so every endpoint's entries change when one comes or goes, and
// keys move between the staying endpoints too (at 10 endpoints a change
// moves 1.6 times the ideal share). "entriesPerWeight": k
// ([RingHashConfig.EntriesPerWeight], lbkit's) builds the ring of Karger
// et al. instead: each endpoint has weight × k entries of its own, so a
// change moves only the changed endpoint's keys, at the cost of picks
// that differ from grpc-go's. maxRingSize (and the cap) must hold the sum
// of the weights times k; a larger sum falls back to A42's ring.
//
// Maglev fills a table of tableSize entries (a prime) from each endpoint's
// permutation of it, in weighted rounds, as Envoy does; a request goes to
// entry hash mod tableSize.
//
// # The request's hash
//
// With requestHashHeader, the hash is XXH64 of the request header's value
// (several values joined with ","), read from [lb.PickInfo.Metadata]; a
// request without the header gets a random hash, walks to the first READY
// endpoint, and asks at most one IDLE endpoint to connect (A76). Without
// it, the hash is [lb.PickInfo.Hash], which a transport computes (nethttp's
// Transport.RequestHash) or the caller sets (conn.PickOptions.Hash); a
// request without one fails with [ErrNoRequestHash], as A76 says.
//
// # Connections and states
//
// Connections are lazy: an endpoint is connected when a pick lands on it,
// and the pick waits. An endpoint that fails counts as TRANSIENT_FAILURE
// until it is READY again, reconnecting after each backoff by itself
// (A62's sticky failure); one that loses a READY connection goes IDLE and
// waits for the next pick. A pick walks the table from the request's entry
// and skips failed endpoints (A61). The policy's state follows A42's six
// rules (READY if one endpoint is; TRANSIENT_FAILURE if two have failed;
// CONNECTING if one is connecting, or one of several has failed; IDLE if
// one is idle), and while it is CONNECTING or failing with nothing
// connecting, it connects one IDLE endpoint itself, so that a policy
// receiving no picks (a lower priority's) still learns when its endpoints
// come back (A61).
//
// # Bounded load
//
// With hashBalanceFactor f, each pick counts the request on its endpoint
// until the request's Done. A READY endpoint takes a request only while its
// requests in flight are below ceil(ceil((all in flight + 1) × f/100) × its
// weight's share); otherwise the walk goes on to the next endpoint
// (Mirrokni, Thorup and Zadimoghaddam's linear probing). A full endpoint
// met first is where the request goes if the walk reaches an endpoint
// that is not READY, so a bound never makes a request wait.
//
// # Concurrency contract
//
// The balancer's methods and its SubConns' listeners run serially on the
// tree's [lb.Scheduler]. A picker is an immutable snapshot of the table and
// every endpoint's state, replaced on every state change (A42); Pick is
// safe for concurrent use, takes no lock, and allocates nothing when it
// returns a READY endpoint. A pick that must connect an endpoint hops onto
// the tree with [lb.Scheduler.Schedule]. Load counters are atomics shared
// by every picker of a balancer.
//
// docs/conformance.md maps each statement of A42, A61's ring_hash section
// and A76 to the test that pins it; docs/choices.md says where lbkit
// chooses.
package consistenthash
