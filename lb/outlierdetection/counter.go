package outlierdetection

import "sync/atomic"

// bucket counts the calls that ended in one interval.
type bucket struct {
	successes atomic.Int64
	failures  atomic.Int64
}

// callCounter is A50's call counter: two buckets, one active (counting the
// calls that end now) and one inactive (holding the counts of the last
// complete interval).
//
// Pickers reach the active bucket through an atomic pointer and count with
// atomic adds, from any goroutine; everything else (swap, reset, reading the
// inactive bucket) happens inside the tree's serialized calls. A call that
// loaded the active bucket just before a swap lands in the bucket being
// evaluated, as in Envoy and grpc-go.
type callCounter struct {
	active   atomic.Pointer[bucket]
	inactive *bucket
}

func newCallCounter() *callCounter {
	c := &callCounter{inactive: &bucket{}}
	c.active.Store(&bucket{})
	return c
}

// record counts one call that ended: nil is a success.
func (c *callCounter) record(failed bool) {
	b := c.active.Load()
	if failed {
		b.failures.Add(1)
	} else {
		b.successes.Add(1)
	}
}

// swap zeroes the inactive bucket and swaps it with the active one, so the
// inactive bucket holds the calls since the previous swap.
func (c *callCounter) swap() {
	next := c.inactive
	next.successes.Store(0)
	next.failures.Store(0)
	c.inactive = c.active.Swap(next)
}

// reset zeroes both buckets.
func (c *callCounter) reset() {
	for _, b := range []*bucket{c.active.Load(), c.inactive} {
		b.successes.Store(0)
		b.failures.Store(0)
	}
}

// last returns the successes and failures of the last complete interval.
func (c *callCounter) last() (successes, failures int64) {
	return c.inactive.successes.Load(), c.inactive.failures.Load()
}
