package grpcgo_test

import (
	"log"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/lbkit/lbkit/adapters/grpcgo"
)

// A grpc-go client that sends its RPCs to the servers of priority p0,
// spread by weight, and fails over to p1's servers if p0 is unreachable.
// Importing grpcgo registers "lbkit_priority"; its children name lbkit
// policies ("weighted_round_robin", "pick_first"). The resolver (a manual
// one here; any grpc-go resolver works) tags each address with its
// priority and weight.
func Example_priority() {
	const serviceConfig = `{"loadBalancingConfig": [{"lbkit_priority": {
		"children": {
			"p0": {"config": [{"weighted_round_robin": {}}]},
			"p1": {"config": [{"pick_first": {}}]}
		},
		"priorities": ["p0", "p1"]
	}}]}`

	at := func(addr, priority string, weight uint32) resolver.Address {
		a := resolver.Address{Addr: addr}
		a = grpcgo.SetHierarchyPath(a, []string{priority})
		return grpcgo.SetWeight(a, weight)
	}
	r := manual.NewBuilderWithScheme("example")
	r.InitialState(resolver.State{Addresses: []resolver.Address{
		at("10.0.0.1:50051", "p0", 1),
		at("10.0.0.2:50051", "p0", 3), // gets 3 of every 4 RPCs
		at("10.1.0.1:50051", "p1", 1), // used only while p0 is down
	}})

	cc, err := grpc.NewClient("example:///my-service",
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(serviceConfig),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	// Use cc with generated stubs as usual: pb.NewMyServiceClient(cc).
}
