package xds_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/clusterimpl"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// pickUntilServed picks wait-for-ready until a pick succeeds (drops fail
// even those), finishing it, so that the channel's endpoint is READY.
func pickUntilServed(t *testing.T, ch *conn.Channel) {
	t.Helper()
	ctx := ctxFor(t)
	for {
		r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
		if err == nil {
			r.Finish(lb.DoneInfo{})
			return
		}
		if !errors.Is(err, lb.ErrDropped) || ctx.Err() != nil {
			t.Fatalf("waiting for a pick: %v", err)
		}
	}
}

// An assignment as a control plane writes it by default (Envoy's
// overprovisioning_factor 140), with a locality of weight 0 and a drop
// category of 25%, through the real go-control-plane server: it is
// accepted (lbkit NACKed both the factor and the weight), the zero-weight
// locality gets no request, and a quarter of the fail-fast picks fail
// with the category named, counted in the policy's metric.
func TestDropsOverprovisioningAndZeroWeightThroughTheServer(t *testing.T) {
	addrs := namedServers(t, "used", "weightless")
	cp := startControlPlane(t)
	cla := assignment("demo", locality{Zone: "a", Weight: 1, Addrs: addrs[:1]}, locality{Zone: "b", Weight: 0, Addrs: addrs[1:]})
	cla.Policy = &endpointv3.ClusterLoadAssignment_Policy{
		OverprovisioningFactor: wrapperspb.UInt32(140),
		DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{
			{Category: "throttle", DropPercentage: &typev3.FractionalPercent{Numerator: 2500, Denominator: typev3.FractionalPercent_TEN_THOUSAND}},
		},
	}
	cp.set("1", []*clusterv3.Cluster{clusterNamed("demo")}, []*endpointv3.ClusterLoadAssignment{cla})
	m := lbtest.NewMetrics()
	ch, err := conn.New("xds-cluster:///demo", conn.WithResolver(testBuilder(t, cp.addr)), conn.WithRandSeed(5, 6), conn.WithMetricsRecorder(m))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	pickUntilServed(t, ch)
	before := m.Value(clusterimpl.MetricDrops.Name, "xds-cluster:///demo", "demo", "throttle")
	const n = 2000
	dropped := 0
	ctx := ctxFor(t)
	for range n {
		r, err := ch.Pick(ctx, conn.PickOptions{})
		switch {
		case err == nil:
			if got := r.SubConn.Address().Addr; got != addrs[0] {
				t.Fatalf("a pick went to %s, want %s (the other locality has weight 0)", got, addrs[0])
			}
			r.Finish(lb.DoneInfo{})
		case errors.Is(err, lb.ErrDropped) && strings.Contains(err.Error(), `drop category "throttle" (25% of requests`):
			dropped++
		default:
			t.Fatalf("pick: %v", err)
		}
	}
	if sd := math.Sqrt(n * 0.25 * 0.75); math.Abs(float64(dropped)-n*0.25) > 5*sd {
		t.Errorf("%d of %d picks dropped, want %v ± %.0f", dropped, n, n*0.25, 5*sd)
	}
	if got := m.Value(clusterimpl.MetricDrops.Name, "xds-cluster:///demo", "demo", "throttle") - before; got != int64(dropped) {
		t.Errorf("%s counted %d drops, want %d", clusterimpl.MetricDrops.Name, got, dropped)
	}
	if got := resolverFact(t, ch, "drop categories"); got != "throttle 25%" {
		t.Errorf("the snapshot's drop categories: %q, want throttle 25%%", got)
	}
	t.Logf("%d of %d dropped", dropped, n)
}

// resolverFact returns the fact called name of ch's resolver in its
// snapshot ("" when it has none).
func resolverFact(t *testing.T, ch *conn.Channel, name string) string {
	t.Helper()
	s, err := ch.Snapshot(ctxFor(t))
	if err != nil || s.Resolver == nil {
		t.Fatalf("Snapshot: %+v, %v", s.Resolver, err)
	}
	for _, f := range s.Resolver.Facts {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// withMaxRequests returns a cluster whose DEFAULT circuit breaker allows
// max requests in flight.
func withMaxRequests(name string, max uint32) *clusterv3.Cluster {
	c := clusterNamed(name)
	c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
		{Priority: corev3.RoutingPriority_HIGH, MaxRequests: wrapperspb.UInt32(100)},
		{Priority: corev3.RoutingPriority_DEFAULT, MaxRequests: wrapperspb.UInt32(max)},
	}}
	return c
}

// A cluster's circuit_breakers max_requests, through the real server, caps
// the requests in flight (gRFC A32): with 3 in flight the 4th pick fails,
// even wait-for-ready, naming the limit, and is counted; a request's end
// frees its place; a new snapshot raising the limit lets more in.
func TestCircuitBreakerCapsRequestsThroughTheServer(t *testing.T) {
	addrs := namedServers(t, "one")
	cp := startControlPlane(t)
	cla := []*endpointv3.ClusterLoadAssignment{assignment("capped", locality{Zone: "a", Weight: 1, Addrs: addrs})}
	cp.set("1", []*clusterv3.Cluster{withMaxRequests("capped", 3)}, cla)
	m := lbtest.NewMetrics()
	ch, err := conn.New("xds-cluster:///capped", conn.WithResolver(testBuilder(t, cp.addr)), conn.WithMetricsRecorder(m))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ctx := ctxFor(t)
	var held []conn.PickResult
	for range 3 {
		r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	_, err = ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
	if !errors.Is(err, clusterimpl.ErrOverLimit) || !errors.Is(err, lb.ErrDropped) || !strings.Contains(err.Error(), `cluster "capped": 3 requests in flight`) {
		t.Fatalf("4th pick: %v, want it failed by the circuit breaker naming the limit", err)
	}
	m.Want(t, 1, clusterimpl.MetricCircuitBreakerDrops.Name, "xds-cluster:///capped", "capped")
	if got := resolverFact(t, ch, "requests in flight"); !strings.HasPrefix(got, "3 of at most 3 ") {
		t.Errorf("the snapshot's requests in flight: %q, want 3 of at most 3", got)
	}
	held[0].Finish(lb.DoneInfo{})
	r, err := ch.Pick(ctx, conn.PickOptions{})
	if err != nil {
		t.Fatalf("pick after a request ended: %v", err)
	}
	held[0] = r

	// The server raises the limit to 5: two more picks go through, then
	// the 6th fails.
	cp.set("2", []*clusterv3.Cluster{withMaxRequests("capped", 5)}, cla)
	for len(held) < 5 {
		r, err := ch.Pick(ctx, conn.PickOptions{})
		switch {
		case err == nil:
			held = append(held, r)
		case !errors.Is(err, clusterimpl.ErrOverLimit) || ctx.Err() != nil:
			t.Fatalf("waiting for the limit of 5: %v", err)
		}
	}
	if _, err := ch.Pick(ctx, conn.PickOptions{}); !strings.Contains(err.Error(), "5 requests in flight") {
		t.Fatalf("6th pick: %v, want over the limit of 5", err)
	}
	for _, r := range held {
		r.Finish(lb.DoneInfo{})
	}
}

// ParseCluster's limit: max_requests of the first DEFAULT threshold, else
// gRFC A32's 1024 (no circuit_breakers, only HIGH thresholds, or
// max_requests unset).
func TestParseClusterCircuitBreakers(t *testing.T) {
	th := func(p corev3.RoutingPriority, max *wrapperspb.UInt32Value) *clusterv3.CircuitBreakers_Thresholds {
		return &clusterv3.CircuitBreakers_Thresholds{Priority: p, MaxRequests: max}
	}
	for _, tc := range []struct {
		name string
		cb   *clusterv3.CircuitBreakers
		want uint32
	}{
		{"none", nil, 1024},
		{"no thresholds", &clusterv3.CircuitBreakers{}, 1024},
		{"HIGH only", &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{th(corev3.RoutingPriority_HIGH, wrapperspb.UInt32(5))}}, 1024},
		{"DEFAULT without max_requests", &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{th(corev3.RoutingPriority_DEFAULT, nil)}}, 1024},
		{"DEFAULT", &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{th(corev3.RoutingPriority_HIGH, wrapperspb.UInt32(5)), th(corev3.RoutingPriority_DEFAULT, wrapperspb.UInt32(7))}}, 7},
		{"the first DEFAULT", &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{th(corev3.RoutingPriority_DEFAULT, wrapperspb.UInt32(0)), th(corev3.RoutingPriority_DEFAULT, wrapperspb.UInt32(9))}}, 0},
		{"off", &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{th(corev3.RoutingPriority_DEFAULT, wrapperspb.UInt32(math.MaxUint32))}}, math.MaxUint32},
	} {
		c := clusterNamed("c")
		c.CircuitBreakers = tc.cb
		cfg, err := xds.ParseCluster(c)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := cfg.Policies.MaxConcurrentRequests; got == nil || *got != tc.want {
			t.Errorf("%s: MaxConcurrentRequests = %v, want %d", tc.name, got, tc.want)
		}
	}
}

// Channels following one cluster share its limit (gRFC A32: one counter
// per cluster in the process), even through different Builders: with
// max_requests 2, one request in flight on each channel fails the next
// pick on either.
func TestChannelsShareTheClusterLimit(t *testing.T) {
	addrs := namedServers(t, "one")
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{withMaxRequests("shared", 2)}, []*endpointv3.ClusterLoadAssignment{assignment("shared", locality{Zone: "a", Weight: 1, Addrs: addrs})})
	ctx := ctxFor(t)
	var chans []*conn.Channel
	var held []conn.PickResult
	for range 2 {
		ch, err := conn.New("xds-cluster:///shared", conn.WithResolver(testBuilder(t, cp.addr)))
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
		if err != nil {
			t.Fatal(err)
		}
		chans, held = append(chans, ch), append(held, r)
	}
	for i, ch := range chans {
		if _, err := ch.Pick(ctx, conn.PickOptions{}); !errors.Is(err, clusterimpl.ErrOverLimit) {
			t.Errorf("channel %d with one request in flight on each: %v, want over the shared limit of 2", i, err)
		}
	}
	held[1].Finish(lb.DoneInfo{})
	r, err := chans[0].Pick(ctx, conn.PickOptions{})
	if err != nil {
		t.Fatalf("channel 0 after channel 1's request ended: %v", err)
	}
	r.Finish(lb.DoneInfo{})
	held[0].Finish(lb.DoneInfo{})
}

// The circuit_breakers fields gRFC A32 ignores are listed in Ignored, for
// the resolver to log; max_requests and priority of the first DEFAULT
// threshold are not.
func TestParseClusterListsIgnoredBreakers(t *testing.T) {
	c := clusterNamed("c")
	c.CircuitBreakers = &clusterv3.CircuitBreakers{
		Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
			{Priority: corev3.RoutingPriority_HIGH, MaxRequests: wrapperspb.UInt32(5)},
			{MaxRequests: wrapperspb.UInt32(7), MaxConnections: wrapperspb.UInt32(100), TrackRemaining: true},
			{MaxRequests: wrapperspb.UInt32(9)},
		},
		PerHostThresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxConnections: wrapperspb.UInt32(1)}},
	}
	cfg, err := xds.ParseCluster(c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"circuit_breakers.thresholds[0]", "circuit_breakers.thresholds[1].max_connections", "circuit_breakers.thresholds[1].track_remaining", "circuit_breakers.thresholds[2]", "circuit_breakers.per_host_thresholds"}
	if len(cfg.Ignored) != len(want) {
		t.Fatalf("Ignored = %q, want %d entries for %q", cfg.Ignored, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(cfg.Ignored[i], w+": ignored (gRFC A32)") {
			t.Errorf("Ignored[%d] = %q, want %s: ignored (gRFC A32)...", i, cfg.Ignored[i], w)
		}
	}
	if *cfg.Policies.MaxConcurrentRequests != 7 {
		t.Errorf("MaxConcurrentRequests = %d, want 7", *cfg.Policies.MaxConcurrentRequests)
	}
	if plain, _ := xds.ParseCluster(withMaxRequests("c", 3)); len(plain.Ignored) != 1 || !strings.HasPrefix(plain.Ignored[0], "circuit_breakers.thresholds[0]: ") {
		t.Errorf("a cluster with a HIGH and a DEFAULT threshold lists %q, want only the HIGH one", plain.Ignored)
	}
}
