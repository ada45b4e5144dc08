package routing_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/routing"
)

var clusterNames = []string{"a", "b", "c"}

// routingModel is what the policy should do, from gRFC A28's text: each
// cluster's last reported state; the split's weights; and what Describe
// should count (issue 31): the picks each route matched since it was
// configured as now (the header routes never change; the split route
// changes with its weights), and the route of the latest pick.
type routingModel struct {
	states  map[string]lb.ConnectivityState
	weights []uint32
	matches [4]uint64
	last    int
}

// configJSON is a config with a header route per cluster (x-c: <name>)
// and a default route splitting requests over the clusters by weights.
func configJSON(weights []uint32) string {
	var routes, split, clusters []string
	for i, c := range clusterNames {
		routes = append(routes, fmt.Sprintf(`{"match":{"prefix":"/","headers":[{"name":"x-c","exactMatch":%q}]},"route":{"cluster":%q}}`, c, c))
		split = append(split, fmt.Sprintf(`{"name":%q,"weight":%d}`, c, weights[i]))
		clusters = append(clusters, fmt.Sprintf(`%q:{"childPolicy":[{"test_script":{"id":%q,"subConn":true}}]}`, c, c))
	}
	routes = append(routes, `{"match":{"prefix":"/"},"route":{"weightedClusters":{"clusters":[`+strings.Join(split, ",")+`]}}}`)
	return `{"routeConfig":{"virtualHosts":[{"domains":["*"],"routes":[` + strings.Join(routes, ",") + `]}]},"clusters":{` + strings.Join(clusters, ",") + `}}`
}

// TestPropertyRoutingFollowsA28 runs random sequences of config updates
// (new split weights), cluster state reports and batches of picks, and
// checks after every step that the published state is the aggregate of
// the clusters' states, that Describe counts each route's picks (a
// changed split starting again at 0) and marks the latest pick's route, that a header route's requests reach exactly its
// cluster's picker, and that every run of one period of split picks gives
// each cluster exactly its share, whatever its state (A28: the pick goes
// to the matched cluster, READY or not).
func TestPropertyRoutingFollowsA28(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := lbtest.NewParent(t)
		p.Build(routing.Builder{})
		m := &routingModel{states: map[string]lb.ConnectivityState{}}
		update := func() {
			old := m.weights
			m.weights = rapid.SliceOfN(rapid.SampledFrom([]uint32{0, 1, 2, 3, 5}), 3, 3).
				Filter(func(w []uint32) bool { return w[0]+w[1]+w[2] > 0 }).Draw(rt, "weights")
			if fmt.Sprint(old) != fmt.Sprint(m.weights) {
				m.matches[3] = 0
				if m.last == 3 {
					m.last = -1 // the latest pick's route is no longer configured
				}
			}
			cfg := p.ParseConfig(routing.Name, configJSON(m.weights))
			if err := p.UpdateAddresses(cfg, lbtest.PathAddr("10.0.0.1:80", "a"), lbtest.PathAddr("10.0.0.2:80", "b"), lbtest.PathAddr("10.0.0.3:80", "c")); err != nil {
				rt.Fatalf("update: %v", err)
			}
			for _, c := range clusterNames {
				if _, ok := m.states[c]; !ok {
					m.states[c] = lb.Connecting
				}
			}
		}
		m.last = -1
		update()
		subConns := map[lb.SubConn]string{}
		rt.Repeat(map[string]func(*rapid.T){
			"update": func(rt *rapid.T) { update() },
			"report": func(rt *rapid.T) {
				c := rapid.SampledFrom(clusterNames).Draw(rt, "cluster")
				s := rapid.SampledFrom([]lb.ConnectivityState{lb.Ready, lb.Connecting, lb.Idle, lb.TransientFailure}).Draw(rt, "state")
				sp := p.Report(c, s, "t")
				m.states[c] = s
				if s == lb.Ready {
					res, err := sp.Pick(lb.PickInfo{Ctx: context.Background()})
					if err != nil {
						rt.Fatalf("a READY script picker failed: %v", err)
					}
					subConns[res.SubConn] = c
				}
			},
			"pick": func(rt *rapid.T) {
				picker := p.State().Picker
				who := func(h http.Header) string {
					res, err := picker.Pick(lb.PickInfo{Ctx: context.Background(), Authority: "svc", Method: "/x", Metadata: h})
					switch {
					case err == nil:
						return subConns[res.SubConn]
					case errors.Is(err, lb.ErrNoSubConnAvailable):
						return "<queue>"
					case errors.Is(err, lb.ErrTransientFailure):
						return strings.SplitN(err.Error(), ":", 2)[0]
					}
					rt.Fatalf("pick failed: %v", err)
					return ""
				}
				for _, c := range clusterNames {
					want := c
					if s := m.states[c]; s == lb.Connecting || s == lb.Idle {
						want = "<queue>"
					}
					if got := who(http.Header{"X-C": {c}}); got != want {
						rt.Fatalf("x-c: %s went to %s, want %s (states %v)", c, got, want, m.states)
					}
				}
				for i := range clusterNames {
					m.matches[i]++
				}
				m.last = 2
				// One period of the split: W = sum of the weights over
				// their gcd picks.
				g := uint32(0)
				for _, w := range m.weights {
					g = gcd(g, w)
				}
				var period uint32
				for _, w := range m.weights {
					period += w / g
				}
				got := map[string]uint32{}
				for range period {
					got[who(nil)]++
				}
				m.matches[3] += uint64(period)
				m.last = 3
				want := map[string]uint32{}
				for i, c := range clusterNames {
					if m.weights[i] == 0 {
						continue
					}
					key := c
					if s := m.states[c]; s == lb.Connecting || s == lb.Idle {
						key = "<queue>"
					}
					want[key] += m.weights[i] / g
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					rt.Fatalf("one period of split picks: %v, want %v (weights %v, states %v)", got, want, m.weights, m.states)
				}
			},
			"": func(rt *rapid.T) {
				var counter lb.StateCounter
				for _, c := range clusterNames {
					counter.Add(m.states[c])
				}
				p.WantState(counter.Aggregate())
				counts, last := matches(describeRoutes(p))
				if fmt.Sprint(counts) != fmt.Sprint(m.matches[:]) || last != m.last {
					rt.Fatalf("Describe counts %v, latest %d; want %v, latest %d", counts, last, m.matches, m.last)
				}
			},
		})
	})
}

func gcd(a, b uint32) uint32 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
