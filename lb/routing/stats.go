package routing

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/route"
)

// routeCounter counts the requests one route matched. Pickers add to it
// concurrently; Describe reads it. It fills a cache line, so that the
// counters of routes matched on different cores do not share one.
type routeCounter struct {
	n atomic.Uint64
	_ [56]byte
}

// matchStats are the counters of a config's routes, by route index, and
// the counter of the route that matched the latest request. The balancer
// replaces routes on each config (keeping the counters of routes that did
// not change) and shares last with every picker.
type matchStats struct {
	routes []*routeCounter
	last   *atomic.Pointer[routeCounter]
}

// count records a request that route i matched. It allocates nothing and
// takes no lock; it writes last only when another route matched the
// previous request, so that a steady stream of one route only reads it.
func (m *matchStats) count(i int) {
	c := m.routes[i]
	c.n.Add(1)
	if m.last.Load() != c {
		m.last.Store(c)
	}
}

// rebuild returns the counters of tab's routes: a route equal to the
// previous config's route at the same position (virtual host and route
// index) keeps its counter, any other gets a new one.
func (m *matchStats) rebuild(prev, tab *route.Table) []*routeCounter {
	out := make([]*routeCounter, 0, tab.Len())
	var old []route.VirtualHost
	if prev != nil {
		old = prev.Config().VirtualHosts
	}
	i := 0 // the previous table's index of old[h].Routes[0]
	for h, vh := range tab.Config().VirtualHosts {
		for j := range vh.Routes {
			var c *routeCounter
			if h < len(old) && j < len(old[h].Routes) && reflect.DeepEqual(old[h].Routes[j], vh.Routes[j]) {
				c = m.routes[i+j]
			}
			if c == nil {
				c = &routeCounter{}
			}
			out = append(out, c)
		}
		if h < len(old) {
			i += len(old[h].Routes)
		}
	}
	return out
}

// describe returns tab's routes with their counts, m holding tab's
// counters.
func (m *matchStats) describe(tab *route.Table) []lb.RouteStats {
	last := m.last.Load()
	out := make([]lb.RouteStats, 0, tab.Len())
	i := 0
	for h, vh := range tab.Config().VirtualHosts {
		host := vh.Name
		if host == "" {
			host = "virtualHosts[" + strconv.Itoa(h) + "]"
		}
		for j, r := range vh.Routes {
			name := r.Name
			if name == "" {
				name = "routes[" + strconv.Itoa(j) + "]"
			}
			match, err := json.Marshal(r.Match)
			if err != nil {
				match = []byte(err.Error())
			}
			c := m.routes[i]
			out = append(out, lb.RouteStats{Route: host + " / " + name, Match: string(match), Action: describeAction(r.Action),
				Matches: c.n.Load(), Last: c == last})
			i++
		}
	}
	return out
}

// describeAction says where a (validated) action sends requests.
func describeAction(a *route.Action) string {
	if a == nil {
		return ""
	}
	if a.WeightedClusters == nil {
		return "cluster " + a.Cluster
	}
	var b strings.Builder
	b.WriteString("weighted clusters ")
	for i, c := range a.WeightedClusters.Clusters {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name + ":" + strconv.FormatUint(uint64(c.Weight), 10))
	}
	return b.String()
}
