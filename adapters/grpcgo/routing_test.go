package grpcgo_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/routing"
)

// routingName is lbkit's xds_routing_experimental, logging to routingLogs.
const routingName = "lbkit_test_routing"

// routingLogs keeps what the routing channels' bridges log.
var routingLogs = &lbtest.Logs{}

func init() {
	grpcgo.Register(routingName, routing.Builder{}, grpcgo.WithLogger(slog.New(routingLogs)))
}

// routingConfig routes every request for a virtual host of domain to
// cluster "a" (round_robin) with a 30 s route timeout.
func routingConfig(domain string) string {
	return `{"loadBalancingConfig": [{"` + routingName + `": {
		"routeConfig": {"virtualHosts": [{"domains": ["` + domain + `"], "routes": [
			{"match": {"prefix": "/"}, "route": {"cluster": "a", "timeout": "30s"}}]}]},
		"clusters": {"a": {"childPolicy": [{"round_robin": {}}]}}}}]}`
}

// The call's authority reaches lbkit's picker (lb.PickInfo.Authority, the
// channel's: "backends" for the target lbkit-test:///backends), so lbkit's
// routing policy finds the virtual host by it, against a real grpc-go
// server; a channel whose routes name another domain drops the call,
// naming the authority it got. The route's timeout (lb.PickResult.Timeout)
// cannot be applied by grpc-go's picker: the calls succeed and the channel
// logs once that it ignores it.
func TestAuthorityReachesTheRoutingPolicy(t *testing.T) {
	b := startBackend(t, "a")
	state := resolver.State{Addresses: []resolver.Address{grpcgo.SetHierarchyPath(b.address(), []string{"a"})}}

	c := newClient(t, state, routingConfig("backends"))
	before := routingLogs.Count(slog.LevelWarn, "pick timeouts")
	for range 3 {
		if got := c.mustWho(t); got != "a" {
			t.Fatalf("routed to %q, want a", got)
		}
	}
	if n := routingLogs.Count(slog.LevelWarn, "pick timeouts") - before; n != 1 {
		t.Fatalf("%d warnings about the ignored timeout after 3 calls, want 1:\n%s", n, routingLogs)
	}
	if !strings.Contains(routingLogs.String(), "cannot shorten a call's deadline") {
		t.Fatalf("the warning does not say why:\n%s", routingLogs)
	}

	other := newClient(t, state, routingConfig("elsewhere"))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err := other.who(ctx, grpc.WaitForReady(true))
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), `authority "backends"`) {
		t.Fatalf("a call no virtual host takes: %v, want UNAVAILABLE naming the authority \"backends\"", err)
	}
}
