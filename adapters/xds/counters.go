package xds

import (
	"sync"

	"github.com/lbkit/lbkit/lb/clusterimpl"
)

// counters is the process's counters of requests in flight, one per
// cluster name, shared by every resolver following that cluster whatever
// its management server or Builder: gRFC A32's "global map to hold call
// counters", a registry like clients.
var counters = struct {
	sync.Mutex
	m map[string]*countedCounter
}{m: make(map[string]*countedCounter)}

type countedCounter struct {
	c    *clusterimpl.Counter
	refs int
}

// acquireCounter returns the counter of cluster's requests in flight,
// counting the reference.
func acquireCounter(cluster string) *clusterimpl.Counter {
	counters.Lock()
	defer counters.Unlock()
	cc := counters.m[cluster]
	if cc == nil {
		cc = &countedCounter{c: clusterimpl.NewCounter()}
		counters.m[cluster] = cc
	}
	cc.refs++
	return cc.c
}

// releaseCounter drops a reference to cluster's counter, forgetting it
// with the last: requests still in flight then count down in a counter no
// new channel gets.
func releaseCounter(cluster string) {
	counters.Lock()
	defer counters.Unlock()
	cc := counters.m[cluster]
	if cc.refs--; cc.refs == 0 {
		delete(counters.m, cluster)
	}
}
