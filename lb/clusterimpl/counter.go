package clusterimpl

import (
	"sync"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/attributes"
)

// Counter counts a cluster's requests in flight (gRFC A32's call
// counter). A balancer makes its own, which lives as long as it, across
// its pickers; a resolver can give several channels' balancers one
// Counter instead ([WithCounter]), as A32 shares one per cluster in the
// process. Pickers count in it from any goroutine: it is safe for
// concurrent use.
type Counter struct {
	n atomic.Int64
	// release is the Done of a counted pick whose child has none.
	release func(lb.DoneInfo)
	// free holds chained Dones not in use.
	free sync.Pool
}

// NewCounter returns a Counter with nothing in flight.
func NewCounter() *Counter {
	c := &Counter{}
	c.release = func(lb.DoneInfo) { c.n.Add(-1) }
	c.free.New = func() any {
		d := &chained{c: c}
		d.fn = d.finish
		return d
	}
	return c
}

// acquire counts one more request in flight unless limit are already
// counted, in which case it counts nothing and reports false. The count
// never passes limit, however many picks race.
func (c *Counter) acquire(limit uint32) bool {
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

// InFlight returns the requests counted now.
func (c *Counter) InFlight() int64 { return c.n.Load() }

// counterKey is the resolver state attribute holding a shared Counter.
var counterKey = attributes.NewKey[*Counter]("lbkit/clusterimpl.Counter")

// WithCounter returns a with c, for a resolver state: the
// xds_cluster_impl_experimental balancer of the channel that receives
// the state counts its requests in flight in c instead of its own
// counter, so every channel given c shares one limit (gRFC A32's
// process-wide counter per cluster). The adapters/xds resolver gives the
// channels following one cluster one Counter.
func WithCounter(a attributes.Attributes, c *Counter) attributes.Attributes {
	return attributes.With(a, counterKey, c)
}

// done returns the Done of a counted pick whose child's Done is child
// (possibly nil): it counts the request out, then calls child.
func (c *Counter) done(child func(lb.DoneInfo)) func(lb.DoneInfo) {
	if child == nil {
		return c.release
	}
	d := c.free.Get().(*chained)
	d.child = child
	return d.fn
}

// chained is a reusable Done that counts a request out and calls the
// child's Done. child is written by the Pick that takes it from the pool
// and read by its Done, which puts it back: the pool orders them.
type chained struct {
	c     *Counter
	child func(lb.DoneInfo)
	fn    func(lb.DoneInfo) // d.finish, bound once
}

// finish counts the request out and calls the child's Done. A second
// call before the chain is taken again (a Done called twice, against
// lb.PickResult's contract) does nothing: the chain is not put back twice,
// nor the request counted out twice.
func (d *chained) finish(di lb.DoneInfo) {
	child, c := d.child, d.c
	if child == nil {
		return
	}
	d.child = nil
	c.free.Put(d)
	c.n.Add(-1)
	child(di)
}

// Counters gives each cluster of an aggregate cluster (gRFC A37) its own
// shared [Counter]: one resolver state feeds several
// xds_cluster_impl_experimental balancers, one per underlying cluster,
// and each must count in its cluster's Counter. A Counters is immutable
// once made and safe for concurrent use.
type Counters struct{ byCluster map[string]*Counter }

// NewCounters returns the Counters of byCluster, keyed by the cluster
// name of each balancer's config ("cluster"). It keeps its own copy.
func NewCounters(byCluster map[string]*Counter) *Counters {
	m := make(map[string]*Counter, len(byCluster))
	for k, v := range byCluster {
		m[k] = v
	}
	return &Counters{byCluster: m}
}

// countersKey is the resolver state attribute holding Counters.
var countersKey = attributes.NewKey[*Counters]("lbkit/clusterimpl.Counters")

// WithCounters returns a with cs, for a resolver state: an
// xds_cluster_impl_experimental balancer of the channel that receives the
// state counts in the Counter cs holds for its config's cluster, which
// takes precedence over a Counter of [WithCounter]; a cluster cs does not
// name falls back to that, then to the balancer's own.
func WithCounters(a attributes.Attributes, cs *Counters) attributes.Attributes {
	return attributes.With(a, countersKey, cs)
}

// counterFor returns the shared Counter for cluster that a carries (by
// [WithCounters], else [WithCounter]), or nil.
func counterFor(a attributes.Attributes, cluster string) *Counter {
	if cs, ok := attributes.Get(a, countersKey); ok && cs != nil {
		if c := cs.byCluster[cluster]; c != nil {
			return c
		}
	}
	if c, ok := attributes.Get(a, counterKey); ok {
		return c
	}
	return nil
}
