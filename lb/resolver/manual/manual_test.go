package manual_test

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/manual"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func state(addrs ...string) resolver.State {
	var s resolver.State
	for _, a := range addrs {
		s.Addresses = append(s.Addresses, resolver.Address{Addr: a})
	}
	return s
}

func build(t *testing.T, b *manual.Builder, cc resolver.ClientConn) resolver.Resolver {
	t.Helper()
	r, err := b.Build(resolver.Target{Scheme: b.Scheme(), Endpoint: "x"}, cc, resolver.BuildOptions{})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return r
}

func wantStates(t *testing.T, cc *lbtest.ResolverClientConn, want ...resolver.State) {
	t.Helper()
	got := cc.States()
	if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("ClientConn got states %v, want %v", got, want)
	}
}

func TestNotRegistered(t *testing.T) {
	if b := resolver.Get("manual"); b != nil {
		t.Errorf("resolver.Get(\"manual\") = %v; importing manual must register nothing", b)
	}
}

func TestUpdateBeforeBuildIsDeliveredOnBuild(t *testing.T) {
	b := manual.NewBuilder("test")
	if b.Scheme() != "test" {
		t.Errorf("Scheme() = %q, want %q", b.Scheme(), "test")
	}
	if err := b.UpdateState(state("a:1")); err != nil {
		t.Fatalf("UpdateState before Build = %v, want nil", err)
	}
	if err := b.UpdateState(state("b:2")); err != nil {
		t.Fatalf("UpdateState before Build = %v, want nil", err)
	}
	b.ReportError(errors.New("superseded by the next state"))
	if err := b.UpdateState(state("b:2")); err != nil {
		t.Fatalf("UpdateState before Build = %v, want nil", err)
	}
	kept := errors.New("kept for Build")
	b.ReportError(kept)
	cc := &lbtest.ResolverClientConn{}
	r := build(t, b, cc)
	defer r.Close()
	wantStates(t, cc, state("b:2"))
	if errs := cc.Errors(); len(errs) != 1 || errs[0] != kept {
		t.Errorf("errors %v reached the ClientConn, want only the one reported after the last state", errs)
	}
	cc2 := &lbtest.ResolverClientConn{}
	r2 := build(t, b, cc2) // delivered once
	defer r2.Close()
	if errs := cc2.Errors(); len(errs) != 0 {
		t.Errorf("a second Build delivered errors %v again", errs)
	}
}

func TestInitialState(t *testing.T) {
	b := manual.NewBuilder("test", manual.WithInitialState(state("a:1")))
	cc := &lbtest.ResolverClientConn{}
	r := build(t, b, cc)
	defer r.Close()
	wantStates(t, cc, state("a:1"))

	cc2 := &lbtest.ResolverClientConn{}
	r2 := build(t, manual.NewBuilder("test"), cc2)
	defer r2.Close()
	wantStates(t, cc2) // no initial state, nothing pushed: nothing delivered
}

func TestUpdatesAndErrorsReachTheClientConn(t *testing.T) {
	b := manual.NewBuilder("test")
	cc := &lbtest.ResolverClientConn{}
	r := build(t, b, cc)
	defer r.Close()
	s := state("a:1", "b:2")
	if err := b.UpdateState(s); err != nil {
		t.Fatal(err)
	}
	s.Addresses[0].Addr = "changed" // the builder copied the state
	boom := errors.New("boom")
	b.ReportError(boom)
	wantStates(t, cc, state("a:1", "b:2"))
	if errs := cc.Errors(); len(errs) != 1 || errs[0] != boom {
		t.Errorf("errors %v, want [%v]", errs, boom)
	}
}

func TestRejectedUpdateReturnsTheChannelsError(t *testing.T) {
	b := manual.NewBuilder("test")
	bad := errors.New("bad resolver state")
	cc := &lbtest.ResolverClientConn{}
	cc.FailUpdates(bad) // the builder has no state yet: Build publishes nothing
	r := build(t, b, cc)
	defer r.Close()
	if err := b.UpdateState(state("a:1")); !errors.Is(err, bad) {
		t.Errorf("UpdateState = %v, want an error wrapping %v", err, bad)
	}
}

func TestUpdateAfterCloseFailsAndIsKept(t *testing.T) {
	b := manual.NewBuilder("test")
	cc := &lbtest.ResolverClientConn{}
	r := build(t, b, cc)
	r.Close()
	r.Close() // idempotent
	if err := b.UpdateState(state("a:1")); !errors.Is(err, manual.ErrClosed) {
		t.Fatalf("UpdateState after Close = %v, want an error wrapping ErrClosed", err)
	}
	b.ReportError(errors.New("dropped"))
	wantStates(t, cc)

	cc2 := &lbtest.ResolverClientConn{}
	r2 := build(t, b, cc2)
	defer r2.Close()
	wantStates(t, cc2, state("a:1"))
	if err := b.UpdateState(state("b:2")); err != nil {
		t.Fatalf("UpdateState after a new Build = %v", err)
	}
	wantStates(t, cc2, state("a:1"), state("b:2"))
}

func TestSecondBuildDetachesTheFirst(t *testing.T) {
	b := manual.NewBuilder("test", manual.WithInitialState(state("a:1")))
	cc1, cc2 := &lbtest.ResolverClientConn{}, &lbtest.ResolverClientConn{}
	r1 := build(t, b, cc1)
	r2 := build(t, b, cc2)
	defer r2.Close()
	if err := b.UpdateState(state("b:2")); err != nil {
		t.Fatal(err)
	}
	r1.Close() // must not detach r2
	if err := b.UpdateState(state("c:3")); err != nil {
		t.Fatalf("UpdateState after closing the detached resolver = %v", err)
	}
	wantStates(t, cc1, state("a:1"))
	wantStates(t, cc2, state("a:1"), state("b:2"), state("c:3"))
}

func TestResolveNowIsObservable(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	b := manual.NewBuilder("test", manual.WithResolveNowFunc(func() {
		mu.Lock()
		defer mu.Unlock()
		calls++
	}))
	r := build(t, b, &lbtest.ResolverClientConn{})
	defer r.Close()
	if n := b.ResolveNowCount(); n != 0 {
		t.Fatalf("ResolveNowCount() = %d before any call", n)
	}
	r.ResolveNow()
	r.ResolveNow()
	mu.Lock()
	defer mu.Unlock()
	if n := b.ResolveNowCount(); n != 2 || calls != 2 {
		t.Errorf("after two ResolveNow: count %d, hook calls %d; want 2 and 2", n, calls)
	}
}

// TestConcurrentUse pushes, reports, resolves and rebuilds from many
// goroutines. Under the race detector it checks the locking; afterwards a
// new Build must deliver the latest push.
func TestConcurrentUse(t *testing.T) {
	b := manual.NewBuilder("test")
	cc := &lbtest.ResolverClientConn{}
	r := build(t, b, cc)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				_ = b.UpdateState(state(fmt.Sprintf("g%d:%d", g, i+1)))
				b.ReportError(errors.New("e"))
				r.ResolveNow()
			}
		}()
	}
	wg.Add(1)
	go func() { // a channel that keeps restarting its resolver
		defer wg.Done()
		for range 20 {
			other, err := b.Build(resolver.Target{Scheme: b.Scheme()}, &lbtest.ResolverClientConn{}, resolver.BuildOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			other.ResolveNow()
			other.Close()
		}
	}()
	wg.Wait()
	if n := b.ResolveNowCount(); n != 420 {
		t.Errorf("ResolveNowCount() = %d, want 420", n)
	}
	r.Close()
	latest := &lbtest.ResolverClientConn{}
	r2 := build(t, b, latest)
	defer r2.Close()
	got := latest.States()
	if len(got) != 1 {
		t.Fatalf("a new Build delivered %v, want the latest state", got)
	}
	// Every goroutine's last push was its 100th; the latest is one of them.
	switch a := got[0].Addresses[0].Addr; a {
	case "g0:100", "g1:100", "g2:100", "g3:100":
	default:
		t.Errorf("latest state %v is not a final push", a)
	}
}
