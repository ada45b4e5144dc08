package grpcgo

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/resolver"
)

// HealthChecker returns a [conn.HealthChecker] that asks a backend's gRPC
// health service (grpc.health.v1.Health, Check) about the service named in
// the channel's service config (healthCheckConfig.serviceName; "" is the
// whole server), for lbkit channels (package conn) whose backends are gRPC
// servers. SERVING passes; any other status, or an error, fails; a server
// without the health service (UNIMPLEMENTED) is treated as healthy and not
// checked again, as gRFC A17 says.
//
// Each check makes its own connection with opts and closes it, so nothing
// is held between checks; without opts it connects without TLS
// (insecure.NewCredentials).
func HealthChecker(opts ...grpc.DialOption) conn.HealthChecker {
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	return conn.HealthCheckFunc(func(ctx context.Context, addr resolver.Address, service string) error {
		cc, err := grpc.NewClient("passthrough:///"+addr.Addr, opts...)
		if err != nil {
			return fmt.Errorf("grpc health check of %s: %w", addr.Addr, err)
		}
		defer cc.Close()
		resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if status.Code(err) == codes.Unimplemented {
			return fmt.Errorf("grpc health check of %s: %w", addr.Addr, conn.ErrHealthCheckUnimplemented)
		}
		if err != nil {
			return fmt.Errorf("grpc health check of %s: %w", addr.Addr, err)
		}
		if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("grpc health check of %s: service %q is %v", addr.Addr, service, s)
		}
		return nil
	})
}
