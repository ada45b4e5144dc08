package nethttp_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/consistenthash"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
	"github.com/lbkit/lbkit/lb/route"
	"github.com/lbkit/lbkit/lb/routing"
)

// gRFC A42 end to end over real servers: a route whose hash policy hashes
// the x-user header, over a ring_hash_experimental cluster of five
// backends that reads no header itself. Each user's requests all reach
// one backend, whatever their path (the route's hash replaces the
// Transport's RequestHash, here the path's); users spread over the
// backends; a request without the header gets a random hash and is
// served; stopping one backend moves only its own users.
func TestRouteHashPolicyGivesAffinityOverRingHash(t *testing.T) {
	servers, _ := ringFarm(t, 5)
	var addrs []resolver.Address
	for _, s := range servers {
		addrs = append(addrs, hierarchy.Set(resolver.Address{Addr: hostOf(s)}, []string{"ring"}))
	}
	policy := routing.Policy{
		Routes: route.Config{VirtualHosts: []route.VirtualHost{{Domains: []string{"*"}, Routes: []route.Route{{
			Match: route.Match{Prefix: ptr("/")},
			Action: &route.Action{Cluster: "ring", HashPolicies: []route.HashPolicy{
				{Header: &route.HeaderHash{HeaderName: "x-user"}}}},
		}}}}},
		Clusters: map[string]lb.PolicyConfig{"ring": consistenthash.RingHashConfig{}},
	}
	r := manual.NewBuilder("hashed", manual.WithInitialState(resolver.State{Addresses: addrs, ServiceConfig: serviceConfig(t, policy)}))
	_, client := hashingClient(t, "hashed:///svc", nethttp.HashPath(), conn.WithResolver(r))

	get := func(path, user string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://svc"+path, nil)
		if user != "" {
			req.Header.Set("X-User", user)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s for %q: %v", path, user, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	owner := map[string]string{}
	used := map[string]int{}
	for u := range 60 {
		user := fmt.Sprintf("user-%d", u)
		owner[user] = get("/", user)
		used[owner[user]]++
		for i := range 3 {
			if got := get(fmt.Sprintf("/item/%d", i), user); got != owner[user] {
				t.Fatalf("%s went to %s, then to %s for /item/%d", user, owner[user], got, i)
			}
		}
	}
	if len(used) < 4 {
		t.Fatalf("60 users on %d of 5 backends: %v", len(used), used)
	}
	anon := map[string]int{}
	for range 50 {
		anon[get("/", "")]++
	}
	if len(anon) < 2 {
		t.Fatalf("50 requests without x-user all went to %v, want random backends", anon)
	}

	servers[0].Close() // s0 leaves; its users move, no one else does
	for user, was := range owner {
		got := get("/", user)
		if was != "s0" && got != was {
			t.Fatalf("%s moved from %s to %s when only s0 stopped", user, was, got)
		}
		if got == "s0" {
			t.Fatalf("%s still answered by the stopped s0", user)
		}
	}
}
