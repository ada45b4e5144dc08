package xds_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// The client's timers (does-not-exist, reconnection backoff) and stream
// failures. The timers are its serializer's, on the injected clock: tests
// wait for the client's state (xds.WaitClient) and advance the mock clock
// with lbtest.AdvanceSerializers, exact to the nanosecond.

// waitBackoff waits until r's client has seen its n-th stream in a row
// end without a response, and returns the backoff it waits before the
// next: the delay of its pending timer on clk.
func waitBackoff(t testing.TB, r resolver.Resolver, clk *clock.Mock, n int) time.Duration {
	t.Helper()
	xds.WaitClient(t, r, func(v xds.ClientView) bool { return v.Retries == n })
	next, ok := xds.SerializerOf(r).NextDeadline()
	if !ok {
		t.Fatalf("retry %d: no backoff timer", n)
	}
	return next.Sub(clk.Now())
}

// waitTimer waits until r's client runs the does-not-exist timer of
// resource ("kind/name").
func waitTimer(t testing.TB, r resolver.Resolver, resource string) {
	t.Helper()
	xds.WaitClient(t, r, func(v xds.ClientView) bool { return slices.Contains(v.Waiting, resource) })
}

// advance moves clk forward by d and waits until r's client has run
// every timer due and what they caused.
func advance(t testing.TB, r resolver.Resolver, clk *clock.Mock, d time.Duration) {
	t.Helper()
	lbtest.AdvanceSerializers(t, clk, d, xds.SerializerOf(r))
}

func TestServerRestartKeepsServingAndSubscribesAgain(t *testing.T) {
	cp := startControlPlane(t)
	cp.set("1", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{twoPriorityAssignment("c1")})
	clk := clock.NewMock()
	cc, r := follow(t, testBuilder(t, cp.addr), "c1", clk, &lbtest.Logs{})
	cc.NextState(t)
	ctx := ctxFor(t)
	cp.waitRequest(ctx, acked(xds.EndpointType, "1"))

	cp.stop()
	// The stream had responses: one attempt at once, then backoff on the
	// injected clock: 1 s, 1.6 s.
	if d := waitBackoff(t, r, clk, 1); d != time.Second {
		t.Errorf("first backoff: %v, want 1s", d)
	}
	advance(t, r, clk, time.Second)
	if d := waitBackoff(t, r, clk, 2); d != 1600*time.Millisecond {
		t.Errorf("second backoff: %v, want 1.6s", d)
	}
	if n := cc.Events.Pending(); n != 0 {
		t.Errorf("while the server is down the resolver reported %v; want the last good state kept silently", cc.Events.Peek())
	}

	streams := cp.streamCount()
	cp.restart()
	advance(t, r, clk, 1600*time.Millisecond)
	// The new stream asks again for what it follows, from the versions it
	// accepted.
	again := cp.waitRequest(ctx, func(r *discoveryv3.DiscoveryRequest) bool {
		return r.GetTypeUrl() == xds.ClusterType && r.GetResponseNonce() == "" && r.GetVersionInfo() == "1"
	})
	if !slices.Equal(again.GetResourceNames(), []string{"c1"}) {
		t.Errorf("resubscription names %v, want [c1]", again.GetResourceNames())
	}
	if cp.streamCount() != streams+1 {
		t.Errorf("streams: %d, want %d", cp.streamCount(), streams+1)
	}
	cp.set("2", []*clusterv3.Cluster{clusterNamed("c1")}, []*endpointv3.ClusterLoadAssignment{
		assignment("c1", locality{Zone: "a", Weight: 1, Addrs: []string{"10.0.0.5:80"}}),
	})
	if got := endpoints(cc.NextState(t)); len(got) != 1 || got[0].addr != "10.0.0.5:80" {
		t.Errorf("after the restart: %v, want 10.0.0.5:80 only", got)
	}
}

func TestUnsentResourceDoesNotExistAfterTheTimeout(t *testing.T) {
	cp := startControlPlane(t) // no snapshot: the server never answers
	clk := clock.NewMock()
	cc, r := follow(t, testBuilder(t, cp.addr, xds.WithResourceTimeout(15*time.Second)), "c1", clk, &lbtest.Logs{})
	waitTimer(t, r, "cluster/c1")
	advance(t, r, clk, 15*time.Second-time.Nanosecond)
	if n := cc.Events.Pending(); n != 0 {
		t.Fatalf("a resource counted as missing before its timeout: %v", cc.Events.Peek())
	}
	advance(t, r, clk, time.Nanosecond)
	if n := cc.Events.Pending(); n != 1 {
		t.Fatalf("at the timeout: %d events, want the empty state at once", n)
	}
	st := cc.NextState(t)
	if len(st.Addresses) != 0 {
		t.Errorf("state %v, want no address", endpoints(st))
	}
	if err := st.Degraded; err == nil || !strings.Contains(err.Error(), `cluster "c1" does not exist`) {
		t.Errorf("the empty state's reason: %v", err)
	}
}

// TestDoesNotExistTimerOnTheRealClock runs the does-not-exist timer on
// the real clock, as production does: a short timeout, a server that
// never answers. The client's first version read, in the timer's
// callback, the timer its creator wrote without the lock: -race failed
// this test (issue 29). Mock clocks never showed it.
func TestDoesNotExistTimerOnTheRealClock(t *testing.T) {
	cp := startControlPlane(t) // no snapshot: the server never answers
	cc, _ := follow(t, testBuilder(t, cp.addr, xds.WithResourceTimeout(5*time.Millisecond)), "c1", clock.New(), &lbtest.Logs{})
	st := cc.NextState(t)
	if err := st.Degraded; len(st.Addresses) != 0 || err == nil || !strings.Contains(err.Error(), `cluster "c1" does not exist`) {
		t.Errorf("state %v (reason %v), want no address because the cluster does not exist", endpoints(st), err)
	}
}

func TestNoServerReportsErrorsAndBacksOff(t *testing.T) {
	cp := startControlPlane(t)
	cp.stop() // nothing listens on cp.addr
	clk := clock.NewMock()
	cc, r := follow(t, testBuilder(t, cp.addr), "c1", clk, &lbtest.Logs{})
	if err := cc.NextError(t); !strings.Contains(err.Error(), "ADS stream to "+cp.addr) {
		t.Errorf("error %q does not name the stream", err)
	}
	var elapsed time.Duration
	for i, want := range []time.Duration{time.Second, 1600 * time.Millisecond, 2560 * time.Millisecond, 4096 * time.Millisecond} {
		if d := waitBackoff(t, r, clk, i+1); d != want {
			t.Errorf("attempt %d: backoff %v, want %v", i+1, d, want)
		}
		// No new stream a nanosecond before the backoff ends; one at its end.
		advance(t, r, clk, want-time.Nanosecond)
		if v := xds.WaitClient(t, r, func(xds.ClientView) bool { return true }); v.Connecting || v.Retries != i+1 {
			t.Fatalf("attempt %d: %+v a nanosecond before the backoff ends", i+1, v)
		}
		advance(t, r, clk, time.Nanosecond)
		if v := xds.WaitClient(t, r, func(xds.ClientView) bool { return true }); !v.Connecting && v.Retries == i+1 {
			t.Fatalf("attempt %d: %+v at the end of the backoff, want a new stream", i+1, v)
		}
		elapsed += want
	}
	if elapsed != 9256*time.Millisecond {
		t.Errorf("elapsed %v", elapsed)
	}
}
