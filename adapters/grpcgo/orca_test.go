package grpcgo_test

import (
	"context"
	"math"
	"net"
	"testing"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/resolver"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/lb/wrr"
)

// mockWRRName is lbkit's weighted_round_robin on wrrClock.
const mockWRRName = "lbkit_test_weighted_round_robin"

// wrrClock drives the weight update timers of every mockWRRName balancer.
var wrrClock = &serializers{clock: clock.NewMock()}

func init() {
	grpcgo.Register(mockWRRName, wrr.Builder{},
		grpcgo.WithClock(wrrClock.clock), grpcgo.WithSerializerObserver(wrrClock.add))
}

// orcaWho is a Who service that reports, with every answer, the load
// util at qps requests per second through grpc-go's per-call ORCA
// recorder.
func orcaWho(name string, util, qps float64) grpc.ServiceDesc {
	d := whoDesc
	d.HandlerType = (*any)(nil)
	d.Methods = []grpc.MethodDesc{{
		MethodName: whoDesc.Methods[0].MethodName,
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			handle := func(ctx context.Context, _ any) (any, error) {
				rec := orca.CallMetricsRecorderFromContext(ctx)
				rec.SetCPUUtilization(util)
				rec.SetQPS(qps)
				rec.SetNamedMetric("queue", 3)
				out := []byte(name)
				return &out, nil
			}
			if icpt == nil {
				return handle(ctx, &in)
			}
			return icpt(ctx, &in, &grpc.UnaryServerInfo{Server: srv, FullMethod: whoMethod}, handle)
		},
	}}
	return d
}

// startORCABackend starts a real grpc-go server, with orca's per-call
// metrics option, that reports util at qps with every answer.
func startORCABackend(tb testing.TB, name string, util, qps float64) resolver.Address {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), orca.CallMetricsServerOption(nil))
	d := orcaWho(name, util, qps)
	srv.RegisterService(&d, nil)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	tb.Cleanup(func() {
		srv.Stop()
		<-served
	})
	return resolver.Address{Addr: lis.Addr().String()}
}

// Real grpc-go servers report their load through grpc-go's orca package;
// lbkit's weighted_round_robin, inside grpc-go, weighs them by gRFC A58:
// the server at a quarter of the other's utilization gets four times its
// requests once the weights are updated.
func TestORCAReportsShiftTrafficToTheLessLoadedServer(t *testing.T) {
	light := startORCABackend(t, "light", 0.2, 100) // weight 500
	heavy := startORCABackend(t, "heavy", 0.8, 100) // weight 125
	c := newClient(t, resolver.State{Addresses: []resolver.Address{light, heavy}},
		`{"loadBalancingConfig": [{"`+mockWRRName+`": {"blackoutPeriod": "0s"}}]}`)
	c.waitUntilServed(t, "light", "heavy")
	before := c.count(t, 100)
	if d := before["light"] - before["heavy"]; d < -2 || d > 2 {
		t.Fatalf("before the weight update: %v, want even shares", before)
	}
	wrrClock.settle(t)
	wrrClock.advance(t, wrr.DefaultWeightUpdatePeriod)
	got := c.count(t, 500)
	if math.Abs(float64(got["light"])-400) > 2 || got["light"]+got["heavy"] != 500 {
		t.Fatalf("after the weight update: %v, want light 400 ± 2 of 500", got)
	}
}
