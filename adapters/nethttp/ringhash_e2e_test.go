package nethttp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/consistenthash"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
)

// ringFarm is n real HTTP servers on loopback that answer with their name.
func ringFarm(t *testing.T, n int) (servers []*httptest.Server, target string) {
	var hosts []string
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, name) }))
		t.Cleanup(s.Close)
		servers = append(servers, s)
		hosts = append(hosts, strings.TrimPrefix(s.URL, "http://"))
	}
	return servers, "static:///" + strings.Join(hosts, ",")
}

// hashingClient returns a channel to target and a client whose requests
// go through it, waiting for ready and hashed by hash (nil: none); both
// are closed when the test ends, before the servers it started earlier.
func hashingClient(t *testing.T, target string, hash func(*http.Request) (uint64, bool), opts ...conn.Option) (*conn.Channel, *http.Client) {
	ch, err := conn.New(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tr := &nethttp.Transport{Channel: ch, WaitForReady: true, RequestHash: hash}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = ch.Close()
	})
	return ch, &http.Client{Transport: tr}
}

// ownerOfUser sends a request for user through client and returns the
// name of the server that answered.
func ownerOfUser(t *testing.T, client *http.Client, user string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://svc/", nil)
	req.Header.Set("X-User", user)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("user %s: %v", user, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// Affinity end to end, both ways of keying a request: the Transport's
// RequestHash (HashHeader) under ring_hash without a header of its own,
// and ring_hash's requestHashHeader reading the request's headers; then
// the ring of entriesPerWeight and Maglev. Each user's requests all go to
// one server, users spread over the servers, and stopping one server
// moves only its own users.
func TestRingHashAffinity(t *testing.T) {
	for _, tc := range []struct {
		name, policy, config string
		hash                 func(*http.Request) (uint64, bool)
	}{
		{"Transport.RequestHash", "ring_hash_experimental", `{}`, nethttp.HashHeader("x-user")},
		{"requestHashHeader", "ring_hash_experimental", `{"requestHashHeader": "x-user"}`, nil},
		{"entriesPerWeight", "ring_hash_experimental", `{"requestHashHeader": "x-user", "entriesPerWeight": 100}`, nil},
		{"maglev", "maglev_experimental", `{"requestHashHeader": "x-user"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers, target := ringFarm(t, 5)
			ch, client := hashingClient(t, target, tc.hash, conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"`+tc.policy+`":`+tc.config+`}]}`))

			owner := map[string]string{}
			used := map[string]int{}
			for u := range 60 {
				user := fmt.Sprintf("user-%d", u)
				owner[user] = ownerOfUser(t, client, user)
				used[owner[user]]++
				for range 3 {
					if got := ownerOfUser(t, client, user); got != owner[user] {
						t.Fatalf("%s went to %s, then %s", user, owner[user], got)
					}
				}
			}
			if len(used) < 4 {
				t.Fatalf("60 users on %d of 5 servers: %v", len(used), used)
			}
			servers[0].Close() // s0 leaves; its users move, no one else does
			for user, was := range owner {
				got := ownerOfUser(t, client, user)
				if was != "s0" && got != was {
					t.Fatalf("%s moved from %s to %s when only s0 stopped", user, was, got)
				}
				if got == "s0" {
					t.Fatalf("%s still answered by the stopped s0", user)
				}
			}
			checkRequestWithoutKey(t, ch, client, tc.hash)
		})
	}
}

// checkRequestWithoutKey sends requests without the X-User header through
// client (wait for ready) over ch. With a requestHashHeader (hash nil)
// they get a random hash (A76) and are served, by more than one server.
// With only the Transport's RequestHash, which gives none, the pick fails
// with consistenthash.ErrNoRequestHash (A76): sent without wait for ready,
// the request fails at once with it (a wait-for-ready request waits for
// a picker that can place it, or its context's end, as in grpc-go; see
// docs/choices.md), never a panic or a hash that would look like
// affinity.
func checkRequestWithoutKey(t *testing.T, ch *conn.Channel, client *http.Client, hash func(*http.Request) (uint64, bool)) {
	t.Helper()
	if hash != nil {
		failFast := &http.Client{Transport: &nethttp.Transport{Channel: ch, RequestHash: hash}}
		if _, err := failFast.Get("http://svc/"); !errors.Is(err, consistenthash.ErrNoRequestHash) {
			t.Fatalf("a request without the key: %v, want consistenthash.ErrNoRequestHash", err)
		}
		return
	}
	served := map[string]bool{}
	for range 20 {
		resp, err := client.Get("http://svc/")
		if err != nil {
			t.Fatalf("a request without the header: %v, want a random backend", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		served[string(body)] = true
	}
	if len(served) < 2 {
		t.Errorf("20 requests without the header all went to %v, want random backends", served)
	}
}

// The hash functions: equal values hash equal, a request without the key
// has none, and a key naming nothing is refused where the program is
// written.
func TestHashFunctions(t *testing.T) {
	req := func(header, cookie string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "http://svc/a/b", nil)
		if header != "" {
			r.Header.Set("X-User", header)
		}
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: "session", Value: cookie})
		}
		return r
	}
	for name, h := range map[string]func(*http.Request) (uint64, bool){
		"header": nethttp.HashHeader("x-user"), "cookie": nethttp.HashCookie("session"),
	} {
		a, okA := h(req("alice", "alice"))
		b, okB := h(req("alice", "alice"))
		c, _ := h(req("bob", "bob"))
		if !okA || !okB || a != b || a == c {
			t.Errorf("%s: alice %x %x, bob %x", name, a, b, c)
		}
		if _, ok := h(req("", "")); ok {
			t.Errorf("%s: a request without the key has a hash", name)
		}
	}
	if p1, ok := nethttp.HashPath()(req("", "")); !ok || p1 == 0 {
		t.Error("HashPath gave no hash")
	}
	for name, f := range map[string]func(){
		"HashHeader": func() { nethttp.HashHeader("") }, "HashCookie": func() { nethttp.HashCookie("") },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), name) {
					t.Errorf("%s(\"\"): recovered %v, want a panic naming it", name, r)
				}
			}()
			f()
		}()
	}
}

// entriesPerWeight end to end: a backend added through the resolver takes
// users only for itself, about its share; no user moves between the
// backends that were there (mutation-checked: without entriesPerWeight,
// A42's ring moves some).
func TestEntriesPerWeightAdditionMovesKeysOnlyToTheNewBackend(t *testing.T) {
	servers, _ := ringFarm(t, 5)
	state := func(ss []*httptest.Server) resolver.State {
		var s resolver.State
		for _, x := range ss {
			s.Addresses = append(s.Addresses, resolver.Address{Addr: hostOf(x)})
		}
		return s
	}
	r := manual.NewBuilder("grow", manual.WithInitialState(state(servers[:4])))
	ch, client := hashingClient(t, "grow:///svc", nil, conn.WithResolver(r),
		conn.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"ring_hash_experimental":{"requestHashHeader": "x-user", "entriesPerWeight": 100}}]}`))

	owner := map[string]string{}
	for u := range 200 {
		user := fmt.Sprintf("user-%d", u)
		owner[user] = ownerOfUser(t, client, user)
	}
	if err := r.UpdateState(state(servers)); err != nil {
		t.Fatal(err)
	}
	settle(t, ch)
	moved := 0
	for user, was := range owner {
		got := ownerOfUser(t, client, user)
		switch {
		case got == was:
		case got == "s4":
			moved++
		default:
			t.Fatalf("%s moved from %s to %s when only s4 was added", user, was, got)
		}
	}
	// About a fifth: 40, with a standard deviation near 7 (the new
	// backend's share of the ring and the draw of 200 users).
	if moved < 5 || moved > 100 {
		t.Fatalf("%d of 200 users moved to the new backend, want about a fifth", moved)
	}
}
