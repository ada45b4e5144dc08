package clusterimpl

import (
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
)

// freeChains is how many chained Dones a balancer keeps for reuse: the
// requests in flight whose Done chains the child's without allocating.
const freeChains = 1024

// counter counts one balancer's requests in flight (gRFC A32's call
// counter). Pickers call acquire and the Dones they return from any
// goroutine; it lives as long as the balancer, across its pickers.
type counter struct {
	n atomic.Int64
	// release is the Done of a counted pick whose child has none.
	release func(lb.DoneInfo)
	// free holds chained Dones not in use.
	free chan *chained
}

func newCounter() *counter {
	c := &counter{free: make(chan *chained, freeChains)}
	c.release = func(lb.DoneInfo) { c.n.Add(-1) }
	return c
}

// acquire counts one more request in flight unless limit are already
// counted, in which case it counts nothing and reports false. The count
// never passes limit, however many picks race.
func (c *counter) acquire(limit uint32) bool {
	for {
		n := c.n.Load()
		if n >= int64(limit) {
			return false
		}
		if c.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// inFlight returns the requests counted now.
func (c *counter) inFlight() int64 { return c.n.Load() }

// done returns the Done of a counted pick whose child's Done is child
// (possibly nil): it counts the request out, then calls child.
func (c *counter) done(child func(lb.DoneInfo)) func(lb.DoneInfo) {
	if child == nil {
		return c.release
	}
	var d *chained
	select {
	case d = <-c.free:
	default:
		d = &chained{c: c}
		d.fn = d.finish
	}
	d.child = child
	return d.fn
}

// chained is a reusable Done that counts a request out and calls the
// child's Done. child is written by the Pick that takes it from the free
// list and read by its Done, which puts it back: the free list orders
// them.
type chained struct {
	c     *counter
	child func(lb.DoneInfo)
	fn    func(lb.DoneInfo) // d.finish, bound once
}

func (d *chained) finish(di lb.DoneInfo) {
	child, c := d.child, d.c
	d.child = nil
	select {
	case c.free <- d:
	default:
	}
	c.n.Add(-1)
	child(di)
}
