package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/demo"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
)

// The resources the demo publishes: the channel's target xds:///demo
// names the listener, whose HTTP connection manager takes the route
// configuration over RDS; its one route sends every request to the
// cluster stable, or from v8 on splits them between stable and canary.
const (
	listener    = "demo"
	routeConfig = "demo-routes"
	stable      = "stable"
	canary      = "canary"
)

// backendNames are the demo's backends, in column order: stable's zone-a,
// zone-b (b-3 joins in v3) and zone-c, then canary's.
var backendNames = []string{"a-1", "a-2", "b-1", "b-2", "b-3", "c-1", "k-1", "k-2"}

// canaryBackends are the backends of the cluster canary, in one locality.
var canaryBackends = backendNames[6:]

// scenario is the xDS demo: its backends, its management server and the
// snapshots it pushes.
type scenario struct {
	demo.Scenario
	backends []*httpbackend.Backend
	addr     map[string]string // backend name → host:port
	cp       *controlplane.Server
	acks     *ackMonitor
}

// snapshot is one version the script pushes, with what the script does
// around it.
type snapshot struct {
	version    string
	label      string
	localities []controlplane.Locality
	draining   []string // backends published with health status DRAINING
	// bad marks a snapshot lbkit must NACK, keeping the last good one.
	bad bool
	// leastRequest publishes the cluster with lb_policy LEAST_REQUEST
	// instead of ROUND_ROBIN; the shares then follow the backends' load,
	// not the weights.
	leastRequest bool
	// canary is the canary cluster's weight, of 100, in the route's split;
	// 0 routes every request to stable alone (one cluster, no split).
	canary uint32
	// prepare, if not nil, runs just before the push.
	prepare func()
	// awaitAnswer makes the push wait, at most awaitBound, for lbkit's
	// answer. The first snapshot needs it: it is pushed before the
	// traffic starts, and on a busy machine the client may first ask for
	// the endpoints after the next push, which then replaces it unseen
	// (it is never ACKed, and the traffic never follows it).
	awaitAnswer bool
	// before, if not nil, is a step of its own that the script runs before
	// the push.
	before *demo.Step
	// watches time how long the traffic took to follow the snapshot.
	watches []*demo.Watch
}

// newScenario starts the backends and the management server and scripts
// the pushes.
func newScenario(o demo.Options) (*scenario, error) {
	sc := &scenario{
		Scenario: demo.Scenario{Name: "xdsdemo", Options: o, Target: "xds:///" + listener,
			About: "xds:///" + listener + " (listener " + listener + ", routes " + routeConfig + ": cluster " + stable + ", from v8 split with " + canary + ")", NameOf: map[string]string{}},
		addr: map[string]string{},
	}
	for _, name := range backendNames {
		b, err := httpbackend.Start(name)
		if err != nil {
			sc.close()
			return nil, err
		}
		sc.backends = append(sc.backends, b)
		sc.addr[name] = b.Addr()
		sc.NameOf[b.Addr()] = name
		sc.Backends = append(sc.Backends, name)
	}
	cp, err := controlplane.Start("127.0.0.1:0")
	if err != nil {
		sc.close()
		return nil, err
	}
	sc.cp = cp
	sc.acks = newAckMonitor(cp)
	sc.Monitor = sc.acks
	boot, err := bootstrap(cp.Addr)
	if err != nil {
		sc.close()
		return nil, err
	}
	b, err := xds.NewBuilder(xds.WithBootstrap(boot))
	if err != nil {
		sc.close()
		return nil, err
	}
	sc.ChannelOptions = []conn.Option{conn.WithResolver(b)}
	if err := sc.script(o); err != nil {
		sc.close()
		return nil, err
	}
	return sc, nil
}

// bootstrap is the xDS bootstrap naming the demo's management server, as
// a program would read it from GRPC_XDS_BOOTSTRAP.
func bootstrap(addr string) (*xds.Bootstrap, error) {
	doc := `{
	  "xds_servers": [{"server_uri": ` + strconv.Quote(addr) + `, "channel_creds": [{"type": "insecure"}]}],
	  "node": {"id": ` + strconv.Quote(controlplane.Node) + `}
	}`
	b, err := xds.ParseBootstrap([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("the demo's bootstrap: %w", err)
	}
	return b, nil
}

// locality returns zone's locality with the named backends.
func (sc *scenario) locality(zone string, priority, weight uint32, names ...string) controlplane.Locality {
	l := controlplane.Locality{Zone: zone, Priority: priority, Weight: weight}
	for _, n := range names {
		l.Addrs = append(l.Addrs, sc.addr[n])
	}
	return l
}

// snapshots returns the versions the script pushes, in order, with the
// watches that time how long the traffic took to follow each; a share is
// measured over window requests in a row.
func (sc *scenario) snapshots(window int) []snapshot {
	l := sc.locality
	in := " of the next " + strconv.Itoa(window) + " requests"
	primary := []controlplane.Locality{l("zone-a", 0, 1, "a-1", "a-2"), l("zone-b", 0, 1, "b-1", "b-2"), l("zone-c", 1, 1, "c-1")}
	return []snapshot{
		{version: "v1", label: "v1: zones a:b 1:1, zone c backup", localities: primary, awaitAnswer: true, watches: []*demo.Watch{
			{Name: "v1", Until: demo.FirstRequestTo("a-1", "a-2", "b-1", "b-2"), Report: "v1: first request served %v after the push"},
		}},
		{version: "v2", label: "v2: zones a:b 1:4",
			localities: []controlplane.Locality{l("zone-a", 0, 1, "a-1", "a-2"), l("zone-b", 0, 4, "b-1", "b-2"), l("zone-c", 1, 1, "c-1")},
			watches: []*demo.Watch{
				{Name: "v2", Until: demo.ShareReaches([]string{"b-1", "b-2"}, 0.8, 0.05, window), Report: "v2: the traffic followed the 1:4 weights from %v after the push (zone b served 80%%±5" + in + ")"},
			}},
		{version: "v3", label: "v3: b-3 added, b-2 draining",
			localities: []controlplane.Locality{l("zone-a", 0, 1, "a-1", "a-2"), l("zone-b", 0, 4, "b-1", "b-2", "b-3"), l("zone-c", 1, 1, "c-1")},
			draining:   []string{"b-2"},
			watches: []*demo.Watch{
				{Name: "v3", Until: demo.FirstRequestTo("b-3"), Report: "v3: b-3 served its first request %v after the push"},
				{Name: "v3 drain", Until: demo.LastRequestTo("b-2"), Report: "v3: b-2 served its last request %v after the push", Missing: "v3: b-2 served no request after the push"},
			}},
		{version: "v4", label: "v4: zone c to priority 0, zones a, b to 1",
			localities: []controlplane.Locality{l("zone-c", 0, 1, "c-1"), l("zone-a", 1, 1, "a-1", "a-2"), l("zone-b", 1, 4, "b-1", "b-2", "b-3")},
			draining:   []string{"b-2"},
			watches: []*demo.Watch{
				{Name: "v4", Until: demo.FirstRequestTo("c-1"), Report: "v4: zone c served %v after the push"},
				{Name: "v4 drain", Until: demo.LastRequestTo("a-1", "a-2", "b-1", "b-3"), Report: "v4: zones a and b served their last request %v after the push", Missing: "v4: zones a and b served no request after the push"},
			}},
		{version: "v5", label: "v5 (bad): zones a, b back, c-1 listed twice", bad: true,
			localities: []controlplane.Locality{l("zone-a", 0, 1, "a-1", "a-2"), l("zone-b", 0, 1, "b-1", "b-2"), l("zone-c", 1, 1, "c-1", "c-1")},
			watches: []*demo.Watch{
				{Name: "v5", Until: demo.FirstRequestTo("a-1", "a-2", "b-1", "b-2", "b-3"),
					Report: "v5: traffic left zone c %v after the bad push", Missing: "v5: traffic stayed in zone c: the last good snapshot stayed in use"},
			}},
		{version: "v6", label: "v6: v1 again", localities: primary, watches: []*demo.Watch{
			{Name: "v6", Until: demo.ShareReaches([]string{"a-1", "a-2"}, 0.5, 0.05, window), Report: "v6: the traffic followed the 1:1 weights again from %v after the push (zone a served 50%%±5" + in + ")"},
			{Name: "v6 b-2", Until: demo.FirstRequestTo("b-2"), Report: "v6: b-2 served again %v after the push"},
		}},
		{version: "v7", label: "v7: lb_policy LEAST_REQUEST", localities: primary, leastRequest: true,
			before: &demo.Step{Label: "a-1 answers in " + slowDelay.String(), Do: func() error {
				sc.backends[0].SetDelay(slowDelay)
				return nil
			}, Watches: []*demo.Watch{
				{Name: "slow", Until: demo.ShareReaches([]string{"a-1"}, 0.25, 0.05, window),
					Report: "a-1 slow: weighted round robin kept sending it its weight's share (25%%±5" + in + " from %v after it slowed)"},
			}},
			watches: []*demo.Watch{
				{Name: "v7", Until: demo.ShareReaches([]string{"a-1"}, 0.125, 0.075, window),
					Report: "v7: least_request steered traffic off the slow a-1 from %v after the push (5-20%%" + in + ", down from 25%%)"},
			}},
		{version: "v8", label: "v8: route stable:canary 90:10 (round robin, a-1 fast)", localities: primary, canary: 10,
			prepare: func() { sc.backends[0].SetDelay(0) },
			watches: []*demo.Watch{
				{Name: "v8", Until: demo.ShareReaches(canaryBackends, 0.1, 0.05, window), Report: "v8: the canary took 10%%±5" + in + " from %v after the push"},
			}},
		{version: "v9", label: "v9: route stable:canary 50:50", localities: primary, canary: 50, watches: []*demo.Watch{
			{Name: "v9", Until: demo.ShareReaches(canaryBackends, 0.5, 0.05, window), Report: "v9: the canary took 50%%±5" + in + " from %v after the push"},
		}},
		{version: "v10", label: "v10: route stable:canary 0:100", localities: primary, canary: 100, watches: []*demo.Watch{
			{Name: "v10", Until: demo.ShareReaches(canaryBackends, 1, 0, window), Report: "v10: the canary took all" + in + " from %v after the push"},
			{Name: "v10 stable", Until: demo.LastRequestTo(backendNames[:6]...), Report: "v10: stable served its last request %v after the push", Missing: "v10: stable served no request after the push"},
		}},
	}
}

// slowDelay is how long a-1 takes to answer from the step before v7.
const slowDelay = 100 * time.Millisecond

// assignment returns s's ClusterLoadAssignment of the cluster stable.
func (sc *scenario) assignment(s snapshot) *endpointv3.ClusterLoadAssignment {
	cla := controlplane.Assignment(stable, s.localities...)
	for _, l := range cla.Endpoints {
		for _, e := range l.LbEndpoints {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			name := sc.NameOf[fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue())]
			if slices.Contains(s.draining, name) {
				e.HealthStatus = corev3.HealthStatus_DRAINING
			}
		}
	}
	return cla
}

// canaryAssignment is the cluster canary's ClusterLoadAssignment, the
// same in every snapshot.
func (sc *scenario) canaryAssignment() *endpointv3.ClusterLoadAssignment {
	return controlplane.Assignment(canary, sc.locality("zone-k", 0, 1, canaryBackends...))
}

// routes returns s's route configuration: every request to stable, or
// split by s.canary.
func routes(s snapshot) *routev3.RouteConfiguration {
	action := &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: stable}}
	if s.canary > 0 {
		action.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{
			Clusters: []*routev3.WeightedCluster_ClusterWeight{
				{Name: stable, Weight: wrapperspb.UInt32(100 - s.canary)},
				{Name: canary, Weight: wrapperspb.UInt32(s.canary)},
			},
		}}
	}
	return &routev3.RouteConfiguration{Name: routeConfig, VirtualHosts: []*routev3.VirtualHost{{
		Name:    listener,
		Domains: []string{"*"},
		Routes: []*routev3.Route{{
			Name:   "default",
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: action},
		}},
	}}}
}

// push publishes s on the management server: the listener, s's routes,
// both clusters and their endpoints (the client asks only for the
// clusters the routes name).
func (sc *scenario) push(s snapshot) error {
	if s.prepare != nil {
		s.prepare()
	}
	c := controlplane.EDSCluster(stable)
	if s.leastRequest {
		c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	}
	l, err := controlplane.RDSListener(listener, routeConfig)
	if err != nil {
		return err
	}
	err = sc.cp.SetResources(s.version, controlplane.Resources{
		Listeners:   []*listenerv3.Listener{l},
		Routes:      []*routev3.RouteConfiguration{routes(s)},
		Clusters:    []*clusterv3.Cluster{c, controlplane.EDSCluster(canary)},
		Assignments: []*endpointv3.ClusterLoadAssignment{sc.assignment(s), sc.canaryAssignment()},
	})
	if err != nil {
		return fmt.Errorf("pushing %s: %w", s.version, err)
	}
	answered := sc.acks.pushed(s)
	if s.awaitAnswer {
		select {
		case <-answered:
		case <-time.After(awaitBound):
			// A hang guard: the run goes on, and the summary says v1 had
			// no answer.
		}
	}
	return nil
}

// awaitBound bounds the wait for lbkit's answer to a snapshot pushed
// with awaitAnswer. It only guards against a hang.
const awaitBound = time.Minute

// script turns the snapshots into steps: v1 before the traffic starts,
// the others (and the steps they run before them) evenly spaced.
func (sc *scenario) script(o demo.Options) error {
	snaps := sc.snapshots(min(max(o.Rate/10, 20), 50))
	for _, s := range snaps {
		if s.before != nil {
			sc.Script = append(sc.Script, *s.before)
		}
		step := demo.Step{Label: s.label, Watches: s.watches, Do: func() error { return sc.push(s) }}
		if !s.bad {
			t, err := sc.topology(s)
			if err != nil {
				return err
			}
			step.Topology = &t
		}
		sc.Script = append(sc.Script, step)
	}
	n := time.Duration(len(sc.Script))
	for i := 1; i < len(sc.Script); i++ {
		// Off the second's boundary, so that its row shows the change.
		sc.Script[i].At = time.Duration(i)*o.Duration/n + o.Duration/(10*n)
	}
	return nil
}

// topology is what the traffic should look like under s: each cluster's
// endpoints share its weight in the route's split; under least_request,
// the shares follow the load, so none is expected.
func (sc *scenario) topology(s snapshot) (demo.Topology, error) {
	t, err := sc.learn(s, sc.assignment(s), 100-s.canary)
	if err != nil {
		return demo.Topology{}, err
	}
	if s.canary > 0 {
		k, err := sc.learn(s, sc.canaryAssignment(), s.canary)
		if err != nil {
			return demo.Topology{}, err
		}
		maps.Copy(t.PriorityOf, k.PriorityOf)
		maps.Copy(t.Want, k.Want)
	}
	if s.leastRequest {
		t.Want = nil
	}
	return t, nil
}

// learn returns the topology of one cluster's assignment, its shares
// scaled by the cluster's weight (of 100) in s's split.
func (sc *scenario) learn(s snapshot, cla *endpointv3.ClusterLoadAssignment, weight uint32) (demo.Topology, error) {
	data, err := protojson.Marshal(cla)
	if err != nil {
		return demo.Topology{}, err
	}
	t, err := sc.Learn(data)
	if err != nil {
		return demo.Topology{}, fmt.Errorf("snapshot %s: %w", s.version, err)
	}
	for name, share := range t.Want {
		t.Want[name] = share * float64(weight) / 100
	}
	return t, nil
}

func (sc *scenario) close() {
	if sc.acks != nil {
		sc.acks.close()
	}
	if sc.cp != nil {
		sc.cp.Stop()
	}
	for _, b := range sc.backends {
		b.Stop()
	}
}
