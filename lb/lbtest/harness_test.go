package lbtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chainBalancer sets a timer whose callback sets another, to show Advance
// measures a timer set by a callback from the instant its parent fired.
type chainBalancer struct {
	opts  lb.BuildOptions
	cc    lb.ClientConn
	fired []time.Duration
	start time.Time
}

func (b *chainBalancer) UpdateClientConnState(lb.ClientConnState) error {
	b.start = b.opts.Clock.Now()
	var step func()
	step = func() {
		b.fired = append(b.fired, b.opts.Clock.Since(b.start))
		if len(b.fired) < 3 {
			b.opts.Scheduler.AfterFunc(10*time.Second, step)
		}
	}
	b.opts.Scheduler.AfterFunc(10*time.Second, step)
	return nil
}
func (b *chainBalancer) ResolverError(error) {}
func (b *chainBalancer) ExitIdle()           {}
func (b *chainBalancer) Close()              {}

type chainBuilder struct{ b *chainBalancer }

func (c chainBuilder) Name() string { return "chain" }
func (c chainBuilder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	c.b.cc, c.b.opts = cc, opts
	return c.b
}

func TestAdvanceStepsDeadlineByDeadline(t *testing.T) {
	h := lbtest.New(t)
	b := &chainBalancer{}
	h.Build(chainBuilder{b})
	if err := h.UpdateAddresses(nil); err != nil {
		t.Fatal(err)
	}
	// One Advance across all three deadlines: each child timer is measured
	// from when its parent fired, so they fire at 10, 20 and 30 s.
	h.Advance(35 * time.Second)
	want := []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second}
	if !slices.Equal(b.fired, want) {
		t.Fatalf("fired at %v, want %v", b.fired, want)
	}
	if got := h.Clock.Now().Sub(time.Unix(0, 0)); got != 35*time.Second {
		t.Fatalf("clock at %v, want 35s", got)
	}
	if _, ok := h.AdvanceToNextDeadline(); ok {
		t.Fatalf("a timer is still pending")
	}
}

func TestClientConnRecordsInOrder(t *testing.T) {
	h := lbtest.New(t)
	cc := h.CC
	var got lb.SubConnState
	h.Do(func() {
		sc, err := cc.NewSubConn([]resolver.Address{{Addr: "a:1"}}, lb.NewSubConnOptions{
			StateListener: func(s lb.SubConnState) { got = s },
		})
		if err != nil {
			t.Fatalf("NewSubConn: %v", err)
		}
		sc.Connect()
		cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
		cc.ResolveNow()
	})
	sc := cc.SubConns()[0]
	sc.Fail(errors.New("refused"))
	if got.ConnectivityState != lb.TransientFailure || got.ConnectionError == nil {
		t.Fatalf("listener got %+v, want TRANSIENT_FAILURE with an error", got)
	}
	h.Do(sc.Shutdown)
	if got.ConnectivityState != lb.Shutdown {
		t.Fatalf("listener got %v after Shutdown, want SHUTDOWN", got.ConnectivityState)
	}
	sc.Ready() // ignored after Shutdown
	if got.ConnectivityState != lb.Shutdown {
		t.Fatalf("listener called after SHUTDOWN")
	}
	var kinds []lbtest.EventKind
	for _, e := range cc.Events() {
		kinds = append(kinds, e.Kind)
	}
	want := []lbtest.EventKind{lbtest.EventNewSubConn, lbtest.EventConnect, lbtest.EventUpdateState, lbtest.EventResolveNow, lbtest.EventShutdown}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	if got := len(cc.TakeEvents()); got != len(want) {
		t.Fatalf("TakeEvents returned %d events, want %d", got, len(want))
	}
	if got := cc.TakeEvents(); len(got) != 0 {
		t.Fatalf("second TakeEvents returned %v, want nothing new", got)
	}
	if h.SubConn(0) != sc || h.State().ConnectivityState != lb.Connecting {
		t.Fatalf("SubConn(0) or State() disagree with what was recorded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := cc.WaitForState(ctx, lb.Connecting); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	if _, err := cc.WaitForState(short, lb.Ready); err == nil {
		t.Fatalf("WaitForState(READY) succeeded with none published")
	}
	if cc.Connects.Pending() != 1 || cc.Shutdowns.Pending() != 1 || cc.ResolveNows.Pending() != 1 {
		t.Fatalf("queues: %d connects, %d shutdowns, %d resolveNows; want 1 each",
			cc.Connects.Pending(), cc.Shutdowns.Pending(), cc.ResolveNows.Pending())
	}
}

func TestQueueNeverDrops(t *testing.T) {
	h := lbtest.New(t)
	h.Do(func() {
		for range 10000 {
			h.CC.ResolveNow()
		}
	})
	if got := len(h.CC.ResolveNows.Drain()); got != 10000 {
		t.Fatalf("drained %d events, want 10000", got)
	}
	if _, ok := h.CC.ResolveNows.TryReceive(); ok {
		t.Fatalf("queue not empty after Drain")
	}
}

func TestCountPicksStopsAtError(t *testing.T) {
	counts, err := lbtest.CountPicks(lb.NewQueuePicker(), 5)
	if !errors.Is(err, lb.ErrNoSubConnAvailable) || len(counts) != 0 {
		t.Fatalf("CountPicks = %v, %v", counts, err)
	}
}

func TestResolverClientConn(t *testing.T) {
	var cc lbtest.ResolverClientConn
	rejected := errors.New("rejected")
	cc.FailUpdates(rejected)
	if err := cc.UpdateState(resolver.State{}); err != rejected {
		t.Fatalf("first UpdateState = %v, want the queued error", err)
	}
	if err := cc.UpdateState(resolver.State{}); err != nil {
		t.Fatalf("second UpdateState = %v, want nil", err)
	}
	cc.ReportError(rejected)
	if got := cc.Events.Peek(); len(got) != 3 || got[2].Err != rejected {
		t.Fatalf("events %v, want two updates then the error", got)
	}
	if cc.Events.Pending() != 3 {
		t.Fatalf("Peek received events")
	}
}

// fatalRecorder records a Fatalf instead of ending the test.
type fatalRecorder struct {
	lbtest.TB
	fatal string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }
func (f *fatalRecorder) Helper()                           {}

// A SubConn the policy never asked to connect cannot report CONNECTING,
// READY or TRANSIENT_FAILURE: the harness refuses what a channel never does.
func TestSubConnRefusesLeavingIdleWithoutConnect(t *testing.T) {
	h := lbtest.New(t)
	rec := &fatalRecorder{TB: t}
	cc := lbtest.NewClientConn(rec, h.Serializer, "test")
	var sc lb.SubConn
	h.Do(func() {
		sc, _ = cc.NewSubConn([]resolver.Address{{Addr: "a:1"}}, lb.NewSubConnOptions{StateListener: func(lb.SubConnState) {}})
	})
	fake := cc.SubConns()[0]
	fake.QueueState(lb.SubConnState{ConnectivityState: lb.Ready})
	if !strings.Contains(rec.fatal, "never called Connect") {
		t.Fatalf("READY without Connect: harness said %q, want a refusal naming Connect", rec.fatal)
	}
	rec.fatal = ""
	h.Do(sc.Connect)
	fake.QueueState(lb.SubConnState{ConnectivityState: lb.Ready})
	if rec.fatal != "" {
		t.Fatalf("READY after Connect refused: %s", rec.fatal)
	}
	cc.DeliverQueued()
	h.Settle()
}
