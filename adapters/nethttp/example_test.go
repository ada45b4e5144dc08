package nethttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
)

// An http.Client balancing across three local servers: first with
// pick_first (every request goes to the first server), then with
// weighted_round_robin (equal weights: requests rotate).
func Example() {
	targets, stop := namedServers("one", "two", "three")
	defer stop()
	target := "static:///" + strings.Join(targets, ",")

	for _, policy := range []string{"pick_first", "weighted_round_robin"} {
		ch, err := conn.New(target, conn.WithDefaultServiceConfig(
			`{"loadBalancingConfig":[{"`+policy+`":{}}]}`))
		if err != nil {
			fmt.Println(err)
			return
		}
		tr := &nethttp.Transport{Channel: ch, WaitForReady: true}
		client := &http.Client{Transport: tr}
		// Wait until every server is connected, so the output is stable.
		for seen := map[string]bool{}; len(seen) < 3 && policy != "pick_first"; {
			seen[fetch(client)] = true
		}
		var got []string
		for range 6 {
			got = append(got, fetch(client))
		}
		fmt.Println(policy+":", summarize(got, policy))
		tr.CloseIdleConnections()
		ch.Close()
	}
	// Output:
	// pick_first: [one one one one one one]
	// weighted_round_robin: 2 each of one, two, three
}

func fetch(c *http.Client) string { return fetchURL(c, "http://my-service/") }

// summarize summarises the round-robin case, whose starting point depends on
// which server connected first.
func summarize(got []string, policy string) any {
	if policy == "pick_first" {
		return got
	}
	n := map[string]int{}
	for _, g := range got {
		n[g]++
	}
	if n["one"] == 2 && n["two"] == 2 && n["three"] == 2 {
		return "2 each of one, two, three"
	}
	return n
}

// namedServers starts one local HTTP server per name, each answering with
// its name, and returns their host:port addresses and a function that
// stops them all.
func namedServers(names ...string) (addrs []string, stop func()) {
	var servers []*httptest.Server
	for _, name := range names {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, name)
		}))
		servers = append(servers, s)
		addrs = append(addrs, strings.TrimPrefix(s.URL, "http://"))
	}
	return addrs, func() {
		for _, s := range servers {
			s.Close()
		}
	}
}
