package nethttp_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
)

// Three servers weighted 1:2:3, written in the static target
// ("host:port=weight"): weighted_round_robin sends them 1, 2 and 3 of every
// 6 requests.
func Example_weights() {
	targets, stop := namedServers("one", "two", "three")
	defer stop()
	for i := range targets {
		targets[i] += fmt.Sprintf("=%d", i+1) // the weight
	}
	ch, err := conn.New("static:///"+strings.Join(targets, ","),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"weighted_round_robin":{}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ch.Close()
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	// Wait until every server is connected, so that the counts are exact.
	for seen := map[string]bool{}; len(seen) < 3; {
		seen[fetch(client)] = true
	}
	counts := map[string]int{}
	for range 600 {
		counts[fetch(client)]++
	}
	fmt.Println("one:", counts["one"], "two:", counts["two"], "three:", counts["three"])
	// Output:
	// one: 100 two: 200 three: 300
}
