package xds

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/lbkit/lbkit/lb/clusterimpl"
	"github.com/lbkit/lbkit/lb/resolver"
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

// limitFacts describes the cluster's limit of requests in flight and its
// assignment's drop categories, for Describe, from v, the resolver's view.
func limitFacts(prefix string, counter *clusterimpl.Counter, v *resolverView) []resolver.Fact {
	var facts []resolver.Fact
	switch {
	case v.cfg == nil || v.cfg.Policies.MaxConcurrentRequests == nil:
	case counter == nil:
		facts = append(facts, resolver.Fact{Name: prefix + "requests in flight", Value: fmt.Sprintf("at most %d (circuit_breakers max_requests, counted by the channel)",
			*v.cfg.Policies.MaxConcurrentRequests)})
	default:
		facts = append(facts, resolver.Fact{Name: prefix + "requests in flight", Value: fmt.Sprintf("%d of at most %d (circuit_breakers max_requests, shared by the process's channels)",
			counter.InFlight(), *v.cfg.Policies.MaxConcurrentRequests)})
	}
	if v.cla != nil && len(v.cla.DropOverloads) > 0 {
		parts := make([]string, len(v.cla.DropOverloads))
		for i, d := range v.cla.DropOverloads {
			parts[i] = d.Category + " " + strconv.FormatFloat(float64(d.DropPercentage.PerMillion())/1e4, 'f', -1, 64) + "%"
		}
		facts = append(facts, resolver.Fact{Name: prefix + "drop categories", Value: strings.Join(parts, ", ")})
	}
	return facts
}
