package conn_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
)

// Report each request's end with Finish: the channel counts it per
// endpoint, for the snapshot (and the debug page) and the
// lbkit.endpoint.* metrics.
func ExamplePickResult_Finish() {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a backend: the kernel accepts for it
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	ch, err := conn.New("static:///"+ln.Addr().String(),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
		conn.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	defer ch.Close()

	ctx := context.Background()
	for i := range 4 {
		picked, err := ch.Pick(ctx, conn.PickOptions{WaitForReady: true})
		if err != nil {
			panic(err)
		}
		// ... send the request to picked.SubConn.Address() ...
		var outcome error
		if i == 3 {
			outcome = errors.New("HTTP 503")
		}
		picked.Finish(lb.DoneInfo{Err: outcome})
	}

	s, err := ch.Snapshot(ctx)
	if err != nil {
		panic(err)
	}
	e := s.Balancer.Endpoints[0]
	fmt.Printf("requests %d, failures %d, failure rate %.2f\n", e.Requests, e.Failures, *e.FailureRate)
	fmt.Printf("config from %s, policy %s\n", s.Config.Source, s.Config.Policy)
	// Output:
	// requests 4, failures 1, failure rate 0.25
	// config from option, policy round_robin
}
