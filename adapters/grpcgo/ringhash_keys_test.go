package grpcgo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"

	"github.com/lbkit/lbkit/adapters/grpcgo"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/consistenthash"
	"github.com/lbkit/lbkit/lb/lbtest"
	lbresolver "github.com/lbkit/lbkit/lb/resolver"
	lbweight "github.com/lbkit/lbkit/lb/weight"
)

// For 100 endpoints with random weights and 100,000 random keys, lbkit's
// ring_hash_experimental picks the endpoint grpc-go's ring_hash_experimental
// picks, for every key: both built from the same addresses and weights,
// the key in the request header both read (gRFC A76). grpc-go's policy runs
// on a fake ClientConn, lbkit's on the lbtest harness: no network, so every
// key can be asked. Both are first warmed by the same 5,000 keys, each
// connecting the endpoint it lands on; with weights from 1 to 100 and the
// default 4,096 entries, the lightest endpoints have no entry at all (in
// both), so they stay IDLE.
func TestRingHashMatchesGrpcGoForEveryKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 42))
	const n, keys = 100, 100_000
	const cfg = `{"requestHashHeader": "x-key"}`
	var eps []resolver.Endpoint
	var addrs []lbresolver.Address
	for i := range n {
		addr := fmt.Sprintf("10.%d.%d.%d:8080", i/256, i%256, rng.IntN(256))
		w := uint32(1 + rng.IntN(100))
		eps = append(eps, weight.Set(resolver.Endpoint{Addresses: []resolver.Address{{Addr: addr}}}, weight.EndpointInfo{Weight: w}))
		addrs = append(addrs, lbweight.Set(lbresolver.Address{Addr: addr}, w))
	}

	theirs, _ := grpcRingHash(t, eps, cfg, warmKeys)
	ours := lbkitRingHash(t, addrs, cfg, warmKeys, 1)
	for k := range keys {
		key := fmt.Sprintf("%x", rng.Uint64())
		want, err := theirs(key)
		if err != nil {
			want = "queued" // the key's endpoint is the one still IDLE
		}
		got := "queued"
		if r, err := ours.Pick(lb.PickInfo{Ctx: context.Background(), Metadata: http.Header{"X-Key": {key}}}); err == nil {
			got = r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr
		}
		if got != want {
			t.Fatalf("key %d (%s): lbkit %s, grpc-go %s", k, key, got, want)
		}
	}
}

// warmKeys is how many keys warm each policy, connecting the endpoints
// they land on.
const warmKeys = 5000

// grpcRingHash builds grpc-go's ring_hash over eps on a fake ClientConn,
// warms it, and returns a function that picks for a key, and the
// ClientConn.
func grpcRingHash(t testing.TB, eps []resolver.Endpoint, cfg string, warm int) (func(key string) (string, error), *fakeCC) {
	t.Helper()
	bb := balancer.Get("ring_hash_experimental")
	parsed, err := bb.(balancer.ConfigParser).ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	cc := newFakeCC()
	bal := bb.Build(cc, balancer.BuildOptions{})
	t.Cleanup(bal.Close)
	if err := bal.UpdateClientConnState(balancer.ClientConnState{ResolverState: resolver.State{Endpoints: eps}, BalancerConfig: parsed}); err != nil {
		t.Fatal(err)
	}
	pick := func(key string) (string, error) {
		st, _ := cc.lastState()
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-key", key)
		r, err := st.Picker.Pick(balancer.PickInfo{Ctx: ctx})
		if err != nil {
			return "", err
		}
		return r.SubConn.(*fakeSubConn).addrs[0].Addr, nil
	}
	// Picks connect the endpoints they land on; each new SubConn becomes
	// READY at once.
	readied := 0
	readyNew := func() {
		for _, sc := range cc.allSubConns()[readied:] {
			sc.setState(connectivity.Connecting, nil)
			sc.setState(connectivity.Ready, nil)
			sc.reportHealthy()
			readied++
		}
	}
	// A pick that lands on an IDLE endpoint queues and connects it on a
	// goroutine of its own (grpc-go's endpointsharding): wait for its
	// SubConn, then make it READY.
	for i := range warm {
		if _, err := pick(fmt.Sprint(i)); err != nil {
			cc.waitSubConns(t, readied+1)
			readyNew()
		}
	}
	t.Logf("grpc-go: %d of %d endpoints READY after %d keys", readied, len(eps), warm)
	return pick, cc
}

// lbkitRingHash builds lbkit's ring_hash over addrs on the harness and
// warms it as grpcRingHash warms grpc-go's; it returns the picker.
func lbkitRingHash(t testing.TB, addrs []lbresolver.Address, cfg string, warm, batch int) lb.Picker {
	t.Helper()
	h := lbtest.New(t)
	_, parsed := h.BuildPolicy(consistenthash.RingHashName, cfg)
	if err := h.UpdateAddresses(parsed, addrs...); err != nil {
		t.Fatal(err)
	}
	// The same keys in batches: a batch's picks connect what they land
	// on, then every endpoint connected is made READY. With batches of
	// one, each key's endpoint is READY before the next key, as
	// grpcRingHash does it; benchmarks use larger ones.
	ready := map[*lbtest.SubConn]bool{}
	for start := 0; start < warm; start += batch {
		for i := start; i < min(start+batch, warm); i++ {
			_, _ = h.State().Picker.Pick(lb.PickInfo{Ctx: context.Background(), Metadata: http.Header{"X-Key": {fmt.Sprint(i)}}})
			h.Settle()
		}
		for _, sc := range h.CC.SubConns() {
			if sc.ConnectCount() > 0 && !ready[sc] {
				sc.Connecting()
				sc.Ready()
				ready[sc] = true
			}
		}
	}
	t.Logf("lbkit: %d of %d endpoints READY after %d keys", len(ready), len(addrs), warm)
	return h.State().Picker
}

// A call's hash set with WithRequestHash reaches lbkit's ring_hash as
// lb.PickInfo.Hash: calls with one hash go to one server, with no header
// configured, and a call without a hash fails as gRFC A76 says.
func TestWithRequestHashKeysTheCall(t *testing.T) {
	var addrs []resolver.Address
	for i := range 4 {
		addrs = append(addrs, startBackend(t, fmt.Sprintf("s%d", i)).address())
	}
	c := newClient(t, resolver.State{Addresses: addrs}, `{"loadBalancingConfig":[{"`+grpcgo.RingHashName+`":{}}]}`)
	ask := func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, hangGuard)
		defer cancel()
		return c.who(ctx, grpc.WaitForReady(true))
	}
	for h := range uint64(20) {
		ctx := grpcgo.WithRequestHash(context.Background(), h*0x9e3779b97f4a7c15)
		first, err := ask(ctx)
		if err != nil {
			t.Fatalf("hash %d: %v", h, err)
		}
		for range 3 {
			if again, err := ask(ctx); err != nil || again != first {
				t.Fatalf("hash %d went to %s, then %s (%v)", h, first, again, err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if _, err := c.who(ctx); err == nil || !strings.Contains(err.Error(), "carries no hash") {
		t.Fatalf("a call without a hash: %v, want the A76 failure", err)
	}
}

// lbkit_peak_ewma runs inside grpc-go: RPCs are served by real servers and
// every pick is released by grpc-go's Done (its in-flight count returns
// to nothing, so later picks still see both servers).
func TestPeakEWMARunsInsideGrpcGo(t *testing.T) {
	var addrs []resolver.Address
	for i := range 2 {
		addrs = append(addrs, startBackend(t, fmt.Sprintf("s%d", i)).address())
	}
	c := newClient(t, resolver.State{Addresses: addrs}, `{"loadBalancingConfig":[{"`+grpcgo.PeakEWMAName+`":{}}]}`)
	c.waitUntilServed(t, "s0", "s1")
}
