// Package edf is an exact, fast earliest-deadline-first scheduler over
// weighted items: the picker of the weighted_round_robin policy (gRFC
// "wrr-edf-per-endpoint-weight"), usable on its own. It depends on nothing
// else in this module.
//
// # Contract
//
// A [Scheduler] is built by [New] from a list of [Entry] values, each an
// item and a weight of at least 1. Entry i has a deadline that starts at
// 1/w_i and an order offset, its index in the list (for [NewFrom], see
// there). [Scheduler.Pick] returns the entry with the lowest deadline, the
// lower order offset winning a tie, and advances that deadline by 1/w_i.
// Consequences:
//
//   - Equal weights give round robin in list order.
//   - The first pick of a new scheduler is the heaviest entry, unless
//     [WithRandomStart] is used.
//   - The sequence repeats every [Scheduler.Period] picks, the sum of the
//     weights divided by their greatest common divisor g, and every run of
//     Period consecutive picks, wherever it starts, contains entry i
//     exactly w_i/g times.
//
// Invalid input (no entries, a weight of 0) is reported as an error naming
// the entry ([EntryError], [ErrZeroWeight], [ErrNoEntries]); no input makes
// the package panic.
//
// # Exactness
//
// No floating point is involved. Deadlines are the rationals j/w_i and are
// compared by cross-multiplying integers (in 128 bits where needed), so the
// sequence is exactly the one the specification defines with real numbers,
// for any weights up to 2^32-1 and after any number of picks: after 2^32,
// 2^64 or more picks (see [Scheduler.Skip]) the counts per period are still
// exact.
//
// # Concurrency
//
// [Scheduler.Pick] and [Scheduler.Skip] are safe for concurrent use by any
// number of goroutines and are linearizable: concurrent picks behave as if
// made one at a time, so the per-period counts above hold for the picks of
// all goroutines together. A Scheduler never changes after construction
// except for its position; to change entries or weights, build a new one
// with [NewFrom] and publish it (for example with an atomic pointer).
//
// Pick never allocates and, in the common case, takes no lock: it draws a
// ticket from an atomic counter and reads its entry from a table of the
// whole period or from a block of the schedule generated ahead of time.
// The table holds entry indices in bits.Len(n-1) bits each and is used
// when it fits 192 bytes per entry (a period of at most 384n picks for 16
// entries, 109n for 10,000, 90n for 100,000: weights 1..100 or nearly
// equal ones such as 63 and 64 at every n). A period of at most 4n
// (equal weights, or nearly) is generated whole at build; a longer one is
// filled on demand, a chunk of 64 to 1024 picks at a time, by the picks
// that find their chunk not generated yet (under a mutex held for one or
// two chunks), so that the first pass through the period generates it
// and building stays O(n); from then on a pick is an atomic add, a ready
// bit and a load. Otherwise the schedule is
// generated exactly, a block of 32 to 1024 picks at a time, by the pick
// that enters the block two ahead of it (so building generates nothing:
// the first pick generates the first blocks); a pick that finds its block
// not generated yet (because picks outran the generator) waits for the
// generator's mutex, which is held for one block (O(block + n) at worst,
// O(1) per pick on average), never for a rebuild.
// See docs/performance.md for measurements.
//
// # Deviation bound
//
// Let W be the sum of the weights and c_i(N) the number of times entry i
// is among the first N picks of a new scheduler (default start). Then for
// every N >= 0
//
//	-(1 - w_i/W)  <=  c_i(N) - N*w_i/W  <=  (n-1)*w_i/W
//
// so an entry is never more than one pick behind its share and never more
// than (n-1)*w_i/W <= min(n-1, w_i) picks ahead. Both bounds are attained
// (the upper one by a heavy entry at the start, before the lighter entries'
// deadlines come up). Proof: if the N-th pick has deadline t, every entry k
// has had each deadline below t, and possibly the one at t:
// c_k = t*w_k - e_k with 0 <= e_k <= 1, and e_k = 0 for the entry just
// picked. Summing, N = t*W - sum e_k, hence
// c_i - N*w_i/W = (w_i/W) * sum_k e_k - e_i, which lies between
// -e_i*(1 - w_i/W) and (n-1)*w_i/W.
//
// Because the sequence is periodic, the same holds with N counted from any
// period boundary, and any window of N consecutive picks starting anywhere
// (after [Scheduler.Skip], a random start, or [NewFrom] with unchanged
// entries) satisfies |c_i - N*w_i/W| <= 1 + (n-2)*w_i/W, the difference of
// two prefixes.
//
// # Updates without restarting
//
// A new schedule starts at its beginning, where heavy entries come first;
// rebuilding it from scratch on every update starves light entries (with
// an update every pick, only the heaviest entry is ever picked). [NewFrom]
// instead continues from the previous scheduler's point in virtual time:
// entries keep their place, changed weights apply from the next pick, new
// entries join at the current point, and entries of equal weights keep
// their rotation even when their weights change together; with unchanged
// entries the sequence continues exactly. [WithRandomStart] starts a new schedule
// at a uniformly random point of its period instead of its beginning.
//
// # Cost
//
// [New] takes O(n); [NewFrom] O(n + m) for m entries in the previous
// scheduler (one hash of each item, none for short lists; the previous
// position is read from the chunk of a table that holds its most recent
// pick, or from a ring's generator and the blocks it is ahead by, or
// found by a seek of O(m log maxweight) after a long skip on a ring).
// A scheduler keeps O(n) memory whatever the weights: with a ring, about
// 48 bytes per entry besides the items, plus blocks of entry indices of 4,
// 8, 16 or 32 bits (4 blocks of 32 to 1024 picks) and a slice buffer of at
// most 1024 buckets (none for at most 16 entries with weights below 2^29,
// whose generator takes the smallest of the entries' next deadlines
// instead); with a table, at most 192 bytes per entry, plus the ring's
// generator state while the table is being filled.
// [Scheduler.Skip] takes O(1); the next pick after a long skip repositions
// the generator in O(n log maxweight).
package edf
