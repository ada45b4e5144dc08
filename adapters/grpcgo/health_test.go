package grpcgo_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// healthServer is a real grpc-go server with the standard health service.
func healthServer(t *testing.T, withHealth bool) (string, *health.Server) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	hs := health.NewServer()
	if withHealth {
		healthpb.RegisterHealthServer(s, hs)
	}
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return ln.Addr().String(), hs
}

// The gRPC checker against a real grpc-go health server: SERVING passes,
// NOT_SERVING fails, and a server without the health service counts as
// healthy (UNIMPLEMENTED, gRFC A17).
func TestHealthCheckerAgainstAGRPCHealthServer(t *testing.T) {
	addr, hs := healthServer(t, true)
	check := grpcgo.HealthChecker()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	target := resolver.Address{Addr: addr}
	hs.SetServingStatus("orders", healthpb.HealthCheckResponse_SERVING)
	if err := check.Check(ctx, target, "orders"); err != nil {
		t.Fatalf("SERVING: %v", err)
	}
	hs.SetServingStatus("orders", healthpb.HealthCheckResponse_NOT_SERVING)
	if err := check.Check(ctx, target, "orders"); err == nil {
		t.Fatal("NOT_SERVING passed")
	}
	bare, _ := healthServer(t, false)
	if err := check.Check(ctx, resolver.Address{Addr: bare}, ""); !errors.Is(err, conn.ErrHealthCheckUnimplemented) {
		t.Fatalf("no health service: %v, want ErrHealthCheckUnimplemented", err)
	}
}

// An lbkit channel whose service config asks for health checks drains a
// backend that reports NOT_SERVING and brings it back when it serves again.
func TestChannelFollowsGRPCHealth(t *testing.T) {
	a, _ := healthServer(t, true)
	b, bHealth := healthServer(t, true)
	ch, err := conn.New("static:///"+a+","+b,
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}], "healthCheckConfig": {"serviceName": ""}}`),
		conn.WithHealthCheck(conn.HealthCheck{Checker: grpcgo.HealthChecker(), Interval: 20 * time.Millisecond,
			UnhealthyThreshold: 1, HealthyThreshold: 1, Jitter: -1, ServiceConfigOnly: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	picksOf := func(n int) map[string]int {
		out := map[string]int{}
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			r, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
			cancel()
			if err != nil {
				t.Fatalf("Pick: %v", err)
			}
			out[r.SubConn.Address().Addr]++
			if r.Done != nil {
				r.Done(lb.DoneInfo{})
			}
		}
		return out
	}
	// waitFor picks until cond holds for a run of picks; the deadline only
	// turns a hang into a failure.
	waitFor := func(what string, cond func(map[string]int) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond(picksOf(20)) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: never happened", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("both serving", func(m map[string]int) bool { return m[a] > 0 && m[b] > 0 })
	bHealth.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	waitFor("b drained", func(m map[string]int) bool { return m[b] == 0 })
	bHealth.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	waitFor("b back", func(m map[string]int) bool { return m[b] > 0 })
}
