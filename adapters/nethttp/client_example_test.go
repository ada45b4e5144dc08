package nethttp_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
)

// One Client for two services: each request goes to the channel of its
// URL's host, made on the host's first request (or by WaitReady) from the
// host's route; one Close closes every channel and connection.
func ExampleClient() {
	addrs, stop := namedServers("users-1", "users-2", "billing")
	defer stop()
	client, err := nethttp.NewClient(
		// users: two backends, round_robin (the client's default policy);
		// requests wait for a backend rather than fail fast.
		nethttp.WithRoute("http://users", nethttp.Route{
			Target:    "static:///" + addrs[0] + "," + addrs[1],
			Transport: &nethttp.Transport{WaitForReady: true},
		}),
		// billing: one backend, with settings of its own.
		nethttp.WithRoute("http://billing", nethttp.Route{
			Target:  "static:///" + addrs[2],
			Options: []conn.Option{conn.WithIdleTimeout(time.Minute)},
		}),
		// Any other host goes through DNS (nethttp.DefaultRoute); a host
		// idle for 5 minutes has its channel closed.
		nethttp.WithIdleTimeout(5*time.Minute),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.WaitReady(ctx, "http://users", "http://billing"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("billing:", fetchURL(client.Client, "http://billing/invoices"))
	seen := map[string]bool{}
	for range 100 {
		seen[fetchURL(client.Client, "http://users/me")] = true
		if len(seen) == 2 {
			break
		}
	}
	fmt.Println("users served by both:", seen["users-1"] && seen["users-2"])
	// Output:
	// billing: billing
	// users served by both: true
}

// Hosts routed by a function, here a service registry, falling back to
// DNS for the hosts it does not know; a host the function refuses fails
// its requests with an error naming the host and the reason.
func ExampleWithRouteFunc() {
	addrs, stop := namedServers("orders")
	defer stop()
	registry := map[string]string{"orders": "static:///" + addrs[0]}
	client, err := nethttp.NewClient(nethttp.WithRouteFunc(func(scheme, host string) (nethttp.Route, error) {
		if target, ok := registry[host]; ok {
			return nethttp.Route{Target: target}, nil
		}
		if strings.HasSuffix(host, ".internal") {
			return nethttp.Route{}, errors.New("not in the service registry")
		}
		return nethttp.DefaultRoute(scheme, host) // dns:///host:80 for http
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	fmt.Println(fetchURL(client.Client, "http://orders/"))
	fmt.Println(fetchURL(client.Client, "http://payments.internal/"))
	// Output:
	// orders
	// Get "http://payments.internal/": nethttp: host http://payments.internal: no route: not in the service registry
}

// The program docs/choices.md sets beside its bufbuild/httplb twin: one
// host resolved through DNS, power-of-two-choices balancing
// (least_request_experimental, gRFC A48), an HTTP health check every 5 s
// that takes a backend out after two failures, and hosts closed after 10
// idle minutes. Compiled, not run: users:8080 is not a real host.
func ExampleWithRoute() {
	client, err := nethttp.NewClient(
		nethttp.WithRoute("http://users:8080", nethttp.Route{
			Target: "dns:///users:8080",
			Options: []conn.Option{
				conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"least_request_experimental":{"choiceCount":2}}]}`),
				conn.WithHealthCheck(conn.HealthCheck{
					Checker:            conn.HTTPHealthCheck{Path: "/healthz"},
					Interval:           5 * time.Second,
					UnhealthyThreshold: 2,
				}),
			},
		}),
		nethttp.WithIdleTimeout(10*time.Minute),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get("http://users:8080/me")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	log.Println(resp.Status)
}
