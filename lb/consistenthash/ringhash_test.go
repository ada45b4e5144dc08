package consistenthash

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"testing"

	"github.com/cespare/xxhash/v2"
	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hashkey"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// A42 "Subchannel State Handling": endpoints start IDLE and are not
// connected until a pick lands on one; that pick queues, the endpoint is
// asked to connect, and once READY the same hash picks it.
func TestConnectsLazilyOnPick(t *testing.T) {
	h := newRing(t, `{}`, addrs(3)...)
	for i := range 3 {
		if n := h.SubConn(i).ConnectCount(); n != 0 {
			t.Fatalf("endpoint %d connected %d times before any pick", i, n)
		}
	}
	if st := h.State().ConnectivityState; st != lb.Idle {
		t.Fatalf("state %v with every endpoint IDLE, want IDLE (A42 rule 5)", st)
	}
	owner := ownerOf(t, h, 42)
	wantQueued(t, h.State().Picker, hashed(42))
	h.Settle()
	sc := h.SubConnFor(owner)
	if sc.ConnectCount() != 1 {
		t.Fatalf("owner %s connected %d times, want 1", owner, sc.ConnectCount())
	}
	for i := range 3 {
		if other := h.SubConn(i); other != sc && other.ConnectCount() != 0 {
			t.Fatalf("endpoint %d connected by a pick for another", i)
		}
	}
	if st := h.State().ConnectivityState; st != lb.Connecting {
		t.Fatalf("state %v after the pick, want CONNECTING", st)
	}
	wantQueued(t, h.State().Picker, hashed(42))
	sc.Ready()
	wantPicked(t, h.State().Picker, hashed(42), owner)
}

// A61's picker: an endpoint in TRANSIENT_FAILURE is skipped and the next
// endpoint on the ring is handled as the first would have been.
func TestFailedEndpointIsSkipped(t *testing.T) {
	h := newRing(t, `{}`, addrs(3)...)
	owner := ownerOf(t, h, 7)
	wantQueued(t, h.State().Picker, hashed(7))
	h.Settle()
	h.SubConnFor(owner).Fail(errors.New("refused"))
	// The next endpoint on the ring is IDLE (or was connected proactively):
	// either way the pick queues and that endpoint connects.
	wantQueued(t, h.State().Picker, hashed(7))
	h.Settle()
	var next *lbtest.SubConn
	for i := range 3 {
		if sc := h.SubConn(i); sc.Addresses()[0].Addr != owner && sc.ConnectCount() > 0 {
			next = sc
		}
	}
	if next == nil {
		t.Fatal("no other endpoint asked to connect after the owner failed")
	}
	next.Ready()
	wantPicked(t, h.State().Picker, hashed(7), next.Addresses()[0].Addr)
}

// A62's sticky TRANSIENT_FAILURE, as ring_hash's lazy pick_first children
// have it: a failed endpoint reconnects by itself after each backoff (IDLE
// report) and counts as failed until READY; an endpoint that loses a READY
// connection goes IDLE and stays so, and re-resolution is asked.
func TestStickyFailureAndLazyReconnect(t *testing.T) {
	h := newRing(t, `{}`, addrs(1)...)
	wantQueued(t, h.State().Picker, hashed(1))
	h.Settle()
	sc := h.SubConn(0)
	sc.Fail(errors.New("refused"))
	if st := h.State().ConnectivityState; st != lb.TransientFailure {
		t.Fatalf("one endpoint failed: %v, want TRANSIENT_FAILURE (rule 6)", st)
	}
	sc.Idle()
	if sc.ConnectCount() != 2 {
		t.Fatalf("failed endpoint connected %d times after its backoff, want 2", sc.ConnectCount())
	}
	sc.Connecting()
	if st := h.State().ConnectivityState; st != lb.TransientFailure {
		t.Fatalf("reconnecting after a failure: %v, want TRANSIENT_FAILURE (sticky)", st)
	}
	sc.Ready()
	if st := h.State().ConnectivityState; st != lb.Ready {
		t.Fatalf("%v after READY", st)
	}
	h.CC.TakeEvents()
	sc.Idle()
	if sc.ConnectCount() != 2 {
		t.Fatal("an endpoint that lost its READY connection reconnected by itself")
	}
	if st := h.State().ConnectivityState; st != lb.Idle {
		t.Fatalf("%v after losing READY, want IDLE", st)
	}
	h.WantEvents("ResolveNow", "UpdateState(IDLE)")
}

// A42's aggregation rules 2 and 4, and A61's proactive connection: while
// CONNECTING or failing with nothing connecting, the policy connects one
// IDLE endpoint by itself.
func TestAggregationAndProactiveConnect(t *testing.T) {
	h := newRing(t, `{}`, addrs(4)...)
	wantQueued(t, h.State().Picker, hashed(3))
	h.Settle()
	var first *lbtest.SubConn
	for i := range 4 {
		if h.SubConn(i).ConnectCount() == 1 {
			first = h.SubConn(i)
		}
	}
	first.Fail(errors.New("refused"))
	if st := h.State().ConnectivityState; st != lb.Connecting {
		t.Fatalf("one of four failed: %v, want CONNECTING (rule 4)", st)
	}
	connecting := 0
	var second *lbtest.SubConn
	for i := range 4 {
		if sc := h.SubConn(i); sc != first && sc.ConnectCount() == 1 {
			connecting++
			second = sc
		}
	}
	if connecting != 1 {
		t.Fatalf("%d endpoints connected proactively, want 1", connecting)
	}
	second.Fail(errors.New("refused"))
	if st := h.State().ConnectivityState; st != lb.TransientFailure {
		t.Fatalf("two failed: %v, want TRANSIENT_FAILURE (rule 2)", st)
	}
	connecting = 0
	for i := range 4 {
		if sc := h.SubConn(i); sc != first && sc != second && sc.ConnectCount() == 1 {
			connecting++
		}
	}
	if connecting != 1 {
		t.Fatalf("after the second failure %d more endpoints connect, want 1", connecting)
	}
}

// The aggregation rules of A42, one row each.
func TestAggregateRules(t *testing.T) {
	R, C, I, F := lb.Ready, lb.Connecting, lb.Idle, lb.TransientFailure
	for _, tc := range []struct {
		states []lb.ConnectivityState
		want   lb.ConnectivityState
	}{
		{[]lb.ConnectivityState{R, F, F}, R},
		{[]lb.ConnectivityState{F, F, C}, F},
		{[]lb.ConnectivityState{C, I, I}, C},
		{[]lb.ConnectivityState{F, I, I}, C},
		{[]lb.ConnectivityState{I, I}, I},
		{[]lb.ConnectivityState{F}, F},
	} {
		b := &balancer{}
		for _, s := range tc.states {
			b.list = append(b.list, &endpoint{state: s})
			b.counts.Add(s)
		}
		if got := b.aggregate(); got != tc.want {
			t.Errorf("aggregate(%v) = %v, want %v", tc.states, got, tc.want)
		}
	}
}

// A76: with requestHashHeader, the header's value is hashed with XXH64,
// several values joined with ","; a request without it gets a random hash,
// walks to the first READY endpoint, and asks at most one IDLE endpoint to
// connect when none is connecting.
func TestRequestHashHeader(t *testing.T) {
	h := newRing(t, `{"requestHashHeader": "X-User"}`, addrs(5)...)
	p := current(t, h)
	if p.header != "x-user" {
		t.Fatalf("header %q, want it lower-cased", p.header)
	}
	alice := withHeader("x-user", "alice")
	if got, _, _ := p.requestHash(&alice); got != xxhash.Sum64String("alice") {
		t.Fatal("the header's value is not hashed with XXH64")
	}
	md := http.Header{"X-User": {"a", "b"}}
	if got, _, _ := p.requestHash(&lb.PickInfo{Metadata: md}); got != xxhash.Sum64String("a,b") {
		t.Fatal("several values are not joined with ','")
	}
	wantQueued(t, p, lb.PickInfo{})
	h.Settle()
	connects := 0
	for i := range 5 {
		connects += h.SubConn(i).ConnectCount()
	}
	if connects != 1 {
		t.Fatalf("a request without the header connected %d endpoints, want 1", connects)
	}
	// Once it is READY, requests without the header go to it, wherever
	// their random hash lands (they may connect IDLE endpoints on the
	// way, which stay unREADY here).
	for i := range 5 {
		if sc := h.SubConn(i); sc.ConnectCount() == 1 {
			sc.Ready()
			for range 20 {
				wantPicked(t, h.State().Picker, lb.PickInfo{}, sc.Addresses()[0].Addr)
			}
			return
		}
	}
}

// A76: without requestHashHeader a request must carry its hash; one that
// does not fails, with an error that says what to do.
func TestNoHashFails(t *testing.T) {
	h := newRing(t, `{}`, addrs(2)...)
	if _, err := h.State().Picker.Pick(lb.PickInfo{}); !errors.Is(err, ErrNoRequestHash) {
		t.Fatalf("pick without a hash: %v, want ErrNoRequestHash", err)
	}
}

// A76's endpoint hash key: an endpoint with one is placed by hashing it, so
// it keeps its place on the ring when its address changes.
func TestHashKeyKeepsThePlace(t *testing.T) {
	h := lbtest.New(t, lbtest.WithRegistry(lbtest.NewRegistry(RingHashBuilder{})))
	_, cfg := h.BuildPolicy(RingHashName, `{}`)
	update := func(addrs ...string) {
		var as []resolver.Address
		for i, a := range addrs {
			as = append(as, hashkey.Set(resolver.Address{Addr: a}, fmt.Sprintf("pod-%d", i)))
		}
		if err := h.UpdateAddresses(cfg, as...); err != nil {
			t.Fatal(err)
		}
	}
	update("10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80")
	before := map[uint64]string{}
	for k := range uint64(200) {
		before[k*0x9e3779b97f4a7c15] = ownerOf(t, h, k*0x9e3779b97f4a7c15)
	}
	update("10.0.0.1:80", "10.0.9.9:80", "10.0.0.3:80") // pod-1 moved
	for hash, was := range before {
		got := ownerOf(t, h, hash)
		if was == "10.0.0.2:80" {
			was = "10.0.9.9:80"
		}
		if got != was {
			t.Fatalf("hash %x went from %s to %s when only pod-1's address changed", hash, was, got)
		}
	}
}

// A42 "Ring Construction": each endpoint's share of the ring is its weight's
// share, to within one entry; the ring has the smallest size above
// minRingSize that gives the lightest endpoint whole entries, bounded by
// maxRingSize.
func TestRingFollowsWeights(t *testing.T) {
	for _, tc := range []struct {
		weights  []uint32
		min, max uint64
		size     int
	}{
		{[]uint32{1, 2, 3}, 1024, 4096, 1026},
		{[]uint32{1, 1}, 1024, 4096, 1024},
		{[]uint32{1, 1000}, 1024, 4096, 2002},
		{[]uint32{1, 10000}, 1024, 4096, 4096},
		{[]uint32{3, 3, 4}, 10, 10, 10},
	} {
		nodes := make([]ringNode, len(tc.weights))
		var sum uint32
		for i, w := range tc.weights {
			nodes[i] = ringNode{hashKey: fmt.Sprintf("10.0.0.%d:80", i), weight: w}
			sum += w
		}
		ring := buildRing(nodes, tc.min, tc.max)
		if len(ring.slots) != tc.size || len(ring.hashes) != tc.size {
			t.Errorf("weights %v, sizes %d..%d: ring of %d, want %d", tc.weights, tc.min, tc.max, len(ring.slots), tc.size)
		}
		counts := make([]int, len(nodes))
		for i, e := range ring.slots {
			counts[e]++
			if i > 0 && ring.hashes[i-1] > ring.hashes[i] {
				t.Fatalf("ring not sorted at %d", i)
			}
		}
		for i, w := range tc.weights {
			want := float64(len(ring.slots)) * float64(w) / float64(sum)
			if d := float64(counts[i]) - want; d > 1 || d < -1 {
				t.Errorf("weights %v: endpoint %d has %d entries, want %.1f", tc.weights, i, counts[i], want)
			}
		}
	}
}

// Weights come from the weight attribute; an address listed twice is one
// endpoint.
func TestWeightAttributeAndDuplicates(t *testing.T) {
	h := lbtest.New(t, lbtest.WithRegistry(lbtest.NewRegistry(RingHashBuilder{})))
	_, cfg := h.BuildPolicy(RingHashName, `{"minRingSize": 30, "maxRingSize": 30}`)
	a := resolver.Address{Addr: "10.0.0.1:80"}
	err := h.UpdateAddresses(cfg, weight.Set(a, 2), resolver.Address{Addr: "10.0.0.2:80"}, a)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.CC.SubConns()); n != 2 {
		t.Fatalf("%d SubConns, want 2 (one per endpoint)", n)
	}
	p := current(t, h)
	counts := map[int32]int{}
	for _, e := range p.table.slots {
		counts[e]++
	}
	if counts[0] != 20 || counts[1] != 10 {
		t.Fatalf("entries %v, want 20 for the weight-2 endpoint and 10 for the other", counts)
	}
}

// A READY pick takes no lock and allocates nothing.
func TestReadyPickDoesNotAllocate(t *testing.T) {
	h := newRing(t, `{}`, addrs(3)...)
	wantQueued(t, h.State().Picker, hashed(9))
	h.Settle()
	for i := range 3 {
		if h.SubConn(i).ConnectCount() > 0 {
			h.SubConn(i).Ready()
		}
	}
	p := h.State().Picker
	info := hashed(9)
	if n := testing.AllocsPerRun(1000, func() { _, _ = p.Pick(info) }); n != 0 {
		t.Fatalf("READY pick allocates %v times", n)
	}
}

// Close shuts every SubConn down; a removed endpoint is shut down at once.
func TestRemovedAndClosedEndpointsShutDown(t *testing.T) {
	h := newRing(t, `{}`, addrs(3)...)
	cfg := RingHashConfig{}
	if err := h.UpdateAddresses(cfg, resolver.Address{Addr: "10.0.0.1:80"}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 3; i++ {
		if !h.SubConn(i).IsShutdown() {
			t.Fatalf("removed endpoint %d not shut down", i)
		}
	}
	if err := h.UpdateAddresses(cfg); err == nil || !errors.Is(err, resolver.ErrNoAddresses) {
		t.Fatalf("empty update: %v, want ErrNoAddresses", err)
	}
	if st := h.State().ConnectivityState; st != lb.TransientFailure {
		t.Fatalf("empty update: %v", st)
	}
	if err := h.UpdateAddresses(cfg, resolver.Address{Addr: "10.0.0.7:80"}); err != nil {
		t.Fatal(err)
	}
	h.CloseBalancer()
	for _, sc := range h.CC.SubConns() {
		if !sc.IsShutdown() {
			t.Fatalf("%v not shut down by Close", sc)
		}
	}
}

// TestPropertyRingConstruction: for random endpoints, weights and sizes,
// the ring is what A42's "Ring Construction" says, checked from the text:
// its size is the smallest at or above minRingSize at which the lightest
// endpoint has a whole number of entries, bounded by maxRingSize (rounded
// up) — or one more or one less: the running sum of the endpoints' shares
// is a float, and where it lands a hair above or below a whole number the
// walk adds or drops an entry, in grpc-go's ring exactly as in lbkit's
// (kept, for the same ring); each
// endpoint has its weight's share of it to within one entry; hashes
// ascend; every entry names an endpoint.
func TestPropertyRingConstruction(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes, total := drawNodes(t, 40, 100)
		n, sum := len(nodes), float64(total)
		maxSize := uint64(rapid.IntRange(1, 5000).Draw(t, "max"))
		minSize := uint64(rapid.IntRange(1, int(maxSize)).Draw(t, "min"))
		ring := buildRing(nodes, minSize, maxSize)
		lightest := 1.0
		for _, nd := range nodes {
			lightest = math.Min(lightest, float64(nd.weight)/sum)
		}
		scale := math.Min(math.Ceil(lightest*float64(minSize))/lightest, float64(maxSize))
		if want := int(math.Ceil(scale)); len(ring.slots) < want-1 || len(ring.slots) > want+1 {
			t.Fatalf("ring of %d entries, want %d (or one more or less)", len(ring.slots), want)
		}
		counts := make([]int, n)
		for i, e := range ring.slots {
			if e < 0 || int(e) >= n {
				t.Fatalf("entry %d names endpoint %d of %d", i, e, n)
			}
			counts[e]++
			if i > 0 && ring.hashes[i-1] > ring.hashes[i] {
				t.Fatalf("hashes descend at %d", i)
			}
		}
		for i, nd := range nodes {
			if want := scale * float64(nd.weight) / sum; math.Abs(float64(counts[i])-want) > 1+1e-9 {
				t.Fatalf("endpoint %d (weight %d) has %d entries, want %.2f", i, nd.weight, counts[i], want)
			}
		}
	})
}
