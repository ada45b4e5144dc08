package routing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/routing"
)

// echoName is a test policy whose picker fails every pick with an
// echoError holding the hash the pick was given: what a hash-based child
// policy would see.
const echoName = "test_hash_echo"

type echoBuilder struct{}

func (echoBuilder) Name() string { return echoName }
func (echoBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &echoBalancer{cc: cc}
}
func (echoBuilder) ParseConfig(json.RawMessage) (lb.Config, error) { return struct{}{}, nil }

type echoBalancer struct{ cc lb.ClientConn }

func (b *echoBalancer) UpdateClientConnState(lb.ClientConnState) error {
	b.cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: echoPicker{}})
	return nil
}
func (b *echoBalancer) ResolverError(error) {}
func (b *echoBalancer) ExitIdle()           {}
func (b *echoBalancer) Close()              {}

type echoPicker struct{}

type echoError struct {
	hash    uint64
	hasHash bool
}

func (e echoError) Error() string { return fmt.Sprintf("hash %#x (%v)", e.hash, e.hasHash) }

func (echoPicker) Pick(info lb.PickInfo) (lb.PickResult, error) {
	return lb.PickResult{}, echoError{info.Hash, info.HasHash}
}

const hashRoutes = `{
	"routeConfig": {"virtualHosts": [{"domains": ["svc"], "routes": [
		{"match": {"prefix": "/user"}, "route": {"cluster": "h", "hashPolicy": [{"header": {"headerName": "x-user"}}]}},
		{"match": {"prefix": "/channel"}, "route": {"cluster": "h", "hashPolicy": [
			{"header": {"headerName": "x-user"}, "terminal": true}, {"filterState": {"key": "io.grpc.channel_id"}}]}},
		{"match": {"prefix": "/ignored"}, "route": {"cluster": "h", "hashPolicy": [{"cookie": {"name": "s"}}]}},
		{"match": {"prefix": "/"}, "route": {"cluster": "h"}}]}]},
	"clusters": {"h": {"childPolicy": [{"test_hash_echo": {}}]}}}`

// newHashRouting builds the routing policy over hashRoutes with seed and
// returns a function that picks and returns the hash the child saw.
func newHashRouting(t *testing.T, seed uint64) func(path string, h http.Header, callerHash uint64, callerHas bool) echoError {
	p := lbtest.NewParent(t, lbtest.WithRegistry(lbtest.NewRegistry(echoBuilder{})), lbtest.WithSeed(seed))
	p.Build(routing.Builder{})
	if err := p.UpdateAddresses(p.ParseConfig(routing.Name, hashRoutes), lbtest.PathAddr("10.0.0.1:80", "h")); err != nil {
		t.Fatal(err)
	}
	picker := p.State().Picker
	return func(path string, h http.Header, callerHash uint64, callerHas bool) echoError {
		t.Helper()
		_, err := picker.Pick(lb.PickInfo{Ctx: context.Background(), Authority: "svc", Method: path, Metadata: h, Hash: callerHash, HasHash: callerHas})
		var e echoError
		if !errors.As(err, &e) {
			t.Fatalf("pick %s: %v, want the echo", path, err)
		}
		return e
	}
}

// gRFC A42 at the routing policy: a route's hash policies give the child
// the request's hash, replacing the caller's (the route is the source, as
// in grpc-go's config selector); a request for which they give none gets
// a random hash, a different one each time; io.grpc.channel_id is one
// random value per channel (per routing balancer), different in another;
// a route without hash policies passes the caller's hash on unchanged.
func TestRouteHashPolicyGivesTheChildItsHash(t *testing.T) {
	t.Parallel()
	pick := newHashRouting(t, 1)
	alice := http.Header{"X-User": {"alice"}}
	want := echoError{xxhash.Sum64String("alice"), true}
	if got := pick("/user", alice, 0, false); got != want {
		t.Fatalf("x-user alice: %v, want %v", got, want)
	}
	if got := pick("/user", alice, 5, true); got != want {
		t.Fatalf("x-user alice, the caller's hash 5: %v, want the route's %v", got, want)
	}
	if got := pick("/channel", alice, 0, false); got != want {
		t.Fatalf("/channel with x-user (terminal): %v, want %v", got, want)
	}

	// No policy gives a hash: a random one per request.
	seen := map[uint64]bool{}
	for _, path := range []string{"/user", "/user", "/ignored", "/ignored"} {
		got := pick(path, nil, 5, true)
		if !got.hasHash || got.hash == 5 || seen[got.hash] {
			t.Fatalf("%s without the header: %v, want a fresh random hash", path, got)
		}
		seen[got.hash] = true
	}

	// The channel id: the same for every request of the balancer, another
	// in another balancer.
	ch := pick("/channel", nil, 0, false)
	if again := pick("/channel", http.Header{"X-Other": {"1"}}, 7, true); again != ch || !ch.hasHash {
		t.Fatalf("channel id: %v then %v", ch, again)
	}
	if other := newHashRouting(t, 2)("/channel", nil, 0, false); other == ch {
		t.Fatalf("two channels share the channel id %#x", ch.hash)
	}

	// No hash policy: the caller's hash, or none, unchanged.
	for _, c := range []echoError{{5, true}, {0, false}} {
		if got := pick("/other", alice, c.hash, c.hasHash); got != c {
			t.Fatalf("a route without hash policies: %v, want the caller's %v", got, c)
		}
	}
}

// The random hashes and the channel id come from the tree's seeded
// random source: the same seed replays them.
func TestRouteHashRandomnessReplays(t *testing.T) {
	t.Parallel()
	a, b := newHashRouting(t, 9), newHashRouting(t, 9)
	for _, path := range []string{"/channel", "/user", "/user"} {
		if x, y := a(path, nil, 0, false), b(path, nil, 0, false); x != y {
			t.Fatalf("%s: %v and %v with one seed", path, x, y)
		}
	}
}

// Picking through a route with header and channel id hash policies
// allocates nothing on the READY path, nor does the random hash of a
// request without the header.
func TestPickWithHashPolicyDoesNotAllocate(t *testing.T) {
	routed := readyRouting(t, hundredRoutes(`[{"header":{"headerName":"x-user"}},{"filterState":{"key":"io.grpc.channel_id"}}]`))
	noHeader := pickInfo
	noHeader.Metadata = http.Header{"X-Tenant": {"gold"}}
	for _, info := range []lb.PickInfo{pickInfo, noHeader} {
		if n := testing.AllocsPerRun(200, func() { _, _ = routed.Pick(info) }); n != 0 {
			t.Fatalf("Pick allocates %v times", n)
		}
	}
}
