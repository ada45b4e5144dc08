package grpcgo_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
)

// TestOutlierDetectionEjectsAFailingServer runs lbkit's outlier detection
// inside grpc-go against real servers: RPCs failing with INTERNAL on one
// server (a failure because grpc-go's DoneInfo.Err is set) eject it at the
// first sweep, and it takes RPCs again once the base ejection time is over.
func TestOutlierDetectionEjectsAFailingServer(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	bad := startBackend(t, "bad")
	bad.failing.Store(true)
	c := newClient(t, resolver.State{Addresses: []resolver.Address{a.address(), b.address(), bad.address()}},
		`{"loadBalancingConfig": [{"`+mockOutlierDetectionName+`": {
			"interval": "10s", "baseEjectionTime": "30s",
			"failurePercentageEjection": {"threshold": 50, "minimumHosts": 1, "requestVolume": 5},
			"childPolicy": [{"weighted_round_robin": {}}]
		}}]}`)
	failures := func(n int) (served map[string]int, failed int) {
		served = make(map[string]int)
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			name, err := c.who(ctx, grpc.WaitForReady(true))
			cancel()
			switch {
			case status.Code(err) == codes.Internal:
				failed++
			case err != nil:
				t.Fatalf("RPC: %v", err)
			default:
				served[name]++
			}
		}
		return served, failed
	}
	// Until every server is connected, RPCs land on those that are: go on
	// until the failing server has failed enough for the sweep to judge it.
	total := map[string]int{}
	for failed := 0; failed < 10 || total["a"] == 0 || total["b"] == 0; {
		served, f := failures(1)
		failed += f
		for n, k := range served {
			total[n] += k
		}
		if total["a"]+total["b"]+failed > 1000 {
			t.Fatalf("before the sweep: served %v, %d failed; want every server used", total, failed)
		}
	}
	outlierClock.settle(t)
	outlierClock.advance(t, 10*time.Second)
	if served, failed := failures(30); failed != 0 {
		t.Fatalf("after the sweep: %d RPCs reached the ejected server (served %v)", failed, served)
	}
	bad.failing.Store(false)
	outlierClock.advance(t, 30*time.Second-time.Nanosecond)
	if served, _ := failures(30); served["bad"] != 0 {
		t.Fatalf("1 ns before the base ejection time: served %v, want nothing on bad", served)
	}
	outlierClock.advance(t, time.Nanosecond)
	if served, _ := failures(30); served["bad"] == 0 {
		t.Fatalf("at the base ejection time: served %v, want bad back", served)
	}
}
