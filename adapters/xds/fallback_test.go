package xds_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/lb/lbtest"
)

// Fallback (gRFC A71) against two real go-control-plane servers: the
// primary, first in xds_servers, and the fallback.

// fallbackBuilder returns a Builder whose bootstrap lists primary, then
// fallback.
func fallbackBuilder(t *testing.T, primary, fallback string) *xds.Builder {
	t.Helper()
	boot := &xds.Bootstrap{Node: xds.Node{ID: testNode}, Servers: []xds.Server{
		{URI: primary, Creds: xds.Creds{Type: "insecure"}},
		{URI: fallback, Creds: xds.Creds{Type: "insecure"}},
	}}
	b, err := xds.NewBuilder(xds.WithBootstrap(boot), xds.WithBackoff(noJitter))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oneEndpoint is a snapshot (testPlane.set's arguments) of version v:
// cluster c1 with the one endpoint addr.
func oneEndpoint(v, addr string) (string, []*clusterv3.Cluster, []*endpointv3.ClusterLoadAssignment) {
	return v, []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{
		assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{addr}}),
	}
}

// TestFallsBackToTheNextServerAndBack: the primary cannot be reached and
// the cluster is not cached, so the client streams to the fallback and
// serves its resources, without an error first (watchers hear of a
// connectivity failure only when no server can serve). When the primary
// answers again, its resources replace the fallback's and the stream to
// the fallback closes.
func TestFallsBackToTheNextServerAndBack(t *testing.T) {
	primary, fallback := startControlPlane(t), startControlPlane(t)
	primary.set(oneEndpoint("p1", "10.0.0.1:80"))
	primary.stop()
	fallback.set(oneEndpoint("f1", "10.0.9.1:80"))
	clk := clock.NewMock()
	cc, r := follow(t, fallbackBuilder(t, primary.addr, fallback.addr), "c1", clk, &lbtest.Logs{})

	ev := cc.Next(t)
	if ev.Err != nil || !slices.Equal(endpoints(ev.State), []endpoint{{"10.0.9.1:80", "priority-0-0>r/a/", 1}}) {
		t.Fatalf("first event %v, want the fallback's endpoint", ev)
	}
	if v := xds.WaitClient(t, r, func(xds.ClientView) bool { return true }); v.Source != 1 || !slices.Equal(v.InUse, []int{0, 1}) {
		t.Fatalf("client %+v: want the fallback as source, both servers in use", v)
	}

	primary.restart()
	// The primary waits its backoff (1 s, on the mock clock), answers, and
	// becomes the source again.
	advance(t, r, clk, waitBackoff(t, r, clk, 1))
	if got := endpoints(cc.NextState(t)); !slices.Equal(got, []endpoint{{"10.0.0.1:80", "priority-0-0>r/a/", 1}}) {
		t.Fatalf("after the primary's return: %v, want its endpoint", got)
	}
	v := xds.WaitClient(t, r, func(v xds.ClientView) bool { return v.Source == 0 })
	if !slices.Equal(v.InUse, []int{0}) {
		t.Errorf("client %+v: the stream to the fallback is still in use", v)
	}
	if n := fallback.streamCount(); n != 1 {
		t.Errorf("%d streams to the fallback, want 1", n)
	}
}

// TestNoFallbackWhileEverythingIsCached: a primary that goes away while
// every watched resource is cached is not a reason to fall back; the
// channel keeps the primary's resources.
func TestNoFallbackWhileEverythingIsCached(t *testing.T) {
	primary, fallback := startControlPlane(t), startControlPlane(t)
	primary.set(oneEndpoint("p1", "10.0.0.1:80"))
	fallback.set(oneEndpoint("f1", "10.0.9.1:80"))
	clk := clock.NewMock()
	cc, r := follow(t, fallbackBuilder(t, primary.addr, fallback.addr), "c1", clk, &lbtest.Logs{})
	cc.NextState(t)

	primary.stop()
	waitBackoff(t, r, clk, 1)
	if v := xds.WaitClient(t, r, func(xds.ClientView) bool { return true }); v.Source != 0 || !slices.Equal(v.InUse, []int{0}) {
		t.Errorf("client %+v: want the primary alone", v)
	}
	if n := fallback.streamCount(); n != 0 {
		t.Errorf("%d streams to the fallback, want none", n)
	}
	if n := cc.Events.Pending(); n != 0 {
		t.Errorf("the resolver reported %v; want the primary's resources kept silently", cc.Events.Peek())
	}
}

// TestNoServerReachableReportsTheLast: with neither server reachable the
// channel hears the error once the fallback has failed too.
func TestNoServerReachableReportsTheLast(t *testing.T) {
	primary, fallback := startControlPlane(t), startControlPlane(t)
	primary.stop()
	fallback.stop()
	cc, _ := follow(t, fallbackBuilder(t, primary.addr, fallback.addr), "c1", clock.NewMock(), &lbtest.Logs{})
	if err := cc.NextError(t); !strings.Contains(err.Error(), "ADS stream to "+fallback.addr) {
		t.Errorf("error %q, want the fallback's failure", err)
	}
}

// TestChannelsOfOtherTargetsFallBackAlone: with a fallback server listed,
// each channel target has a client of its own (gRFC A71), so one whose
// cluster is missing does not move another off the primary.
func TestChannelsOfOtherTargetsFallBackAlone(t *testing.T) {
	primary, fallback := startControlPlane(t), startControlPlane(t)
	primary.set(oneEndpoint("p1", "10.0.0.1:80"))
	fallback.set(oneEndpoint("f1", "10.0.9.1:80"))
	b := fallbackBuilder(t, primary.addr, fallback.addr)
	clk := clock.NewMock()
	_, r1 := follow(t, b, "c1", clk, &lbtest.Logs{})
	_, r2 := follow(t, b, "c2", clk, &lbtest.Logs{})
	if xds.SerializerOf(r1) == xds.SerializerOf(r2) {
		t.Error("two channel targets share a client")
	}
}
