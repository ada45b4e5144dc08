package routing

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/edf"
	"github.com/lbkit/lbkit/lb/route"
)

// action is a route's action, compiled: the slot of its one cluster, or
// an EDF scheduler over its clusters' slots, its timeout, and its hash
// policies (nil when it has none).
type action struct {
	slot    int
	split   *splitSched
	timeout time.Duration
	hasher  *route.Hasher
}

// splitSched is the scheduler of a weighted-clusters action.
type splitSched struct {
	sched *edf.Scheduler[int]
}

// buildActions compiles the config's routes' actions against the current
// children's slots. A weighted split whose clusters, weights and slots are
// those of a split of the previous config keeps that split's scheduler, so
// an update that leaves a split alone does not restart its schedule.
func (b *balancer) buildActions() error {
	tab := b.config.Routes
	actions := make([]action, tab.Len())
	scheds := map[string]*splitSched{}
	for i := range actions {
		a := tab.Route(i).Action
		actions[i].timeout = a.Bound()
		actions[i].hasher = tab.Hasher(i)
		if a.WeightedClusters == nil {
			actions[i].slot = b.children.Get(a.Cluster).Data.slot
			continue
		}
		var entries []edf.Entry[int]
		var key strings.Builder
		for _, c := range a.WeightedClusters.Clusters {
			if c.Weight == 0 {
				continue
			}
			slot := b.children.Get(c.Name).Data.slot
			entries = append(entries, edf.Entry[int]{Item: slot, Weight: c.Weight})
			fmt.Fprintf(&key, "%d:%d,", slot, c.Weight)
		}
		k := key.String()
		s := scheds[k]
		if s == nil {
			s = b.scheds[k]
		}
		if s == nil {
			sched, err := edf.New(entries, edf.WithRandomStart(b.opts.Rand))
			if err != nil {
				return fmt.Errorf("routing: route %d: %w", i, err)
			}
			s = &splitSched{sched: sched}
		}
		scheds[k] = s
		actions[i].split = s
	}
	b.actions, b.scheds = actions, scheds
	return nil
}

// picker routes each request (gRFC A28): it finds the request's route in
// the table, chooses the route's cluster (by exact EDF over the weights
// for a split, whatever the clusters' states), computes the request's
// hash when the route has hash policies (gRFC A42), and returns that
// cluster's picker's result, with the route's timeout. It is immutable
// but for the schedulers' positions and the random source, which are safe
// for concurrent use.
type picker struct {
	routes  *route.Table
	actions []action
	// pickers holds each cluster's latest picker at its slot.
	pickers []lb.Picker
	rnd     *source
	// channelID is what the io.grpc.channel_id hash policy gives.
	channelID uint64
	// stats count the requests each route matched.
	stats matchStats
}

// Pick routes the request. Its outcomes:
//   - no virtual host or no route matches: a drop ([lb.DropError]) naming
//     the authority, method and path, which fails the request even if it
//     is wait-for-ready;
//   - the cluster has published no picker yet: [lb.ErrNoSubConnAvailable];
//   - otherwise the cluster picker's result and error, with Timeout set
//     to the route's timeout when that is shorter.
//
// When the route has hash policies, the cluster's picker gets the hash
// they compute ([route.Hasher]) in info.Hash, replacing any the caller
// set; when none of them gives one, a random hash (gRFC A42), so a
// hash-based policy sends the request to a random endpoint. A route
// without hash policies passes the caller's Hash on unchanged.
//
// It counts the request as matched by its route (for Describe), with one
// atomic add. It allocates nothing itself on success, unless a hash policy
// rewrites a header with a regex.
func (p *picker) Pick(info lb.PickInfo) (lb.PickResult, error) {
	req := route.Request{Authority: info.Authority, Method: info.HTTPMethod, Path: info.Method, Headers: info.Metadata}
	i, err := p.routes.Find(&req, p.rnd)
	if err != nil {
		return lb.PickResult{}, lb.DropError(fmt.Errorf("routing: %w: %s %s (authority %s)",
			err, info.HTTPMethod, strconv.Quote(info.Method), strconv.Quote(info.Authority)))
	}
	p.stats.count(i)
	a := &p.actions[i]
	slot := a.slot
	if a.split != nil {
		slot = a.split.sched.Pick()
	}
	cp := p.pickers[slot]
	if cp == nil {
		return lb.PickResult{}, lb.ErrNoSubConnAvailable
	}
	if a.hasher != nil {
		h, ok := a.hasher.Hash(&req, p.channelID)
		if !ok {
			h = p.rnd.Uint64()
		}
		info.Hash, info.HasHash = h, true
	}
	res, err := cp.Pick(info)
	if err == nil && a.timeout > 0 && (res.Timeout == 0 || a.timeout < res.Timeout) {
		res.Timeout = a.timeout
	}
	return res, err
}

// source is a random source safe for concurrent use without a lock: a
// SplitMix64 sequence whose position is one atomic counter.
type source struct{ state atomic.Uint64 }

func newSource(seed uint64) *source {
	s := &source{}
	s.state.Store(seed)
	return s
}

// Uint64 returns the next number of the sequence.
func (s *source) Uint64() uint64 {
	z := s.state.Add(0x9e3779b97f4a7c15)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
