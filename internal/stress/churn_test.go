package stress

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// pushResolver hands the test its ClientConn, to publish from.
type pushResolver struct {
	ccs chan resolver.ClientConn
}

func (r *pushResolver) Scheme() string { return "push" }
func (r *pushResolver) Build(_ resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	r.ccs <- cc
	return nopResolver{}, nil
}

type nopResolver struct{}

func (nopResolver) ResolveNow() {}
func (nopResolver) Close()      {}

// addressSets remembers the address set of every generation published.
type addressSets struct {
	mu   sync.RWMutex
	sets map[int]map[string]bool
}

func (s *addressSets) put(gen int, addrs []resolver.Address) {
	set := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		set[a.Addr] = true
	}
	s.mu.Lock()
	s.sets[gen] = set
	s.mu.Unlock()
}

// within reports whether addr is in some set of generations from to to.
func (s *addressSets) within(addr string, from, to int) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for g := from; g <= to; g++ {
		if s.sets[g][addr] {
			return true
		}
	}
	return false
}

// 32 goroutines pick fail-fast while, every millisecond, the addresses,
// their weights and the service config change (the policy switching
// between pick_first and weighted_round_robin every tenth update), and
// connections to every backend but one are killed. Then Close. No pick may
// fail (one backend is always in the set and never killed, so an endpoint
// is always READY or about to be), no pick may return a backend removed
// more than one applied update ago, and nothing may leak.
func TestChannelChurn(t *testing.T) {
	duration := span(2*time.Second, 60*time.Second)
	baseline := openFDs(t)
	stable := startTCPBackend(t)
	var flaky []*tcpBackend
	for range 3 {
		flaky = append(flaky, startTCPBackend(t))
	}
	latest := &atomic.Pointer[applied]{}
	latest.Store(&applied{})
	res := &pushResolver{ccs: make(chan resolver.ClientConn, 1)}
	ch, err := conn.New("push:///churn", conn.WithResolver(res), conn.WithRandSeed(7, 7),
		conn.WithRegistry(lb.NewRegistry(probeBuilder{latest: latest})),
		conn.WithDialer(conn.TCPDialer{Hold: true}), // killed connections are noticed at once
		conn.WithBackoff(backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 50 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	ch.Connect()
	cc := <-res.ccs

	sets := &addressSets{sets: map[int]map[string]bool{}}
	rng := rand.New(rand.NewPCG(1, 2))
	publish := func(gen int) {
		addrs := []resolver.Address{weight.Set(resolver.Address{Addr: stable.addr}, uint32(1+rng.IntN(10)))}
		for _, b := range flaky {
			if rng.IntN(3) > 0 {
				addrs = append(addrs, weight.Set(resolver.Address{Addr: b.addr}, uint32(1+rng.IntN(10))))
			}
		}
		rng.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
		child := "pick_first"
		if gen/10%2 == 1 {
			child = "weighted_round_robin"
		}
		sets.put(gen, addrs)
		sc := fmt.Sprintf(`{"loadBalancingConfig":[{"stress_probe":{"gen":%d,"childPolicy":[{%q:{}}]}}]}`, gen, child)
		_ = cc.UpdateState(resolver.State{Addresses: addrs, ServiceConfig: []byte(sc)})
	}
	publish(1)

	var counts tally
	pickers := startWorkers(32, func() {
		before := latest.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := ch.Pick(ctx, conn.PickOptions{})
		cancel()
		if err != nil {
			counts.fail("failed picks", err)
			return
		}
		addr := r.SubConn.Address().Addr
		if r.Done != nil {
			r.Done(lb.DoneInfo{})
		}
		after := latest.Load()
		if !sets.within(addr, before.prev, after.cur) {
			counts.fail("picks of removed backends", fmt.Errorf("%s not in generations %d..%d", addr, before.prev, after.cur))
		}
		counts.add("picks", 1)
	})
	krng := rand.New(rand.NewPCG(3, 4))
	killer := startWorkers(1, func() {
		time.Sleep(3 * time.Millisecond)
		counts.add("connections killed", flaky[krng.IntN(len(flaky))].kill())
	})
	tick := time.NewTicker(time.Millisecond)
	end := time.Now().Add(duration)
	gen := 1
	for time.Now().Before(end) {
		<-tick.C
		gen++
		publish(gen)
	}
	tick.Stop()
	pickers.end()
	killer.end()
	closeReturns(t, ch)
	counts.add("updates published", gen)
	t.Logf("churn over %v: %v", duration, &counts)
	if counts.get("picks") == 0 {
		t.Fatal("no pick succeeded")
	}
	if n := counts.get("failed picks") + counts.get("picks of removed backends"); n > 0 {
		t.Fatalf("%d bad picks: %v; first: %v", n, &counts, counts.errs)
	}
	stable.stop()
	for _, b := range flaky {
		b.stop()
	}
	waitFDs(t, baseline)
}
