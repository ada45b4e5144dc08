package slowstart_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/peakewma"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/slowstart"
	"github.com/lbkit/lbkit/lb/wrr"
)

// rampingRR returns a harness running round_robin with a warm endpoint
// "a" (READY before slow start was configured) and a 10 s linear slow
// start, and the parsed config.
func rampingRR(t *testing.T) (*lbtest.Harness, lb.Config) {
	h := lbtest.New(t)
	_, plain := h.BuildPolicy(roundrobin.Name, `{}`)
	cfg, _, err := lb.ParseConfig(roundrobin.Builder{}, []byte(`{"slowStartConfig": {"slowStartWindow": "10s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.UpdateAddresses(plain, resolver.Address{Addr: "a"}); err != nil {
		t.Fatal(err)
	}
	h.SubConn(0).Ready()
	return h, cfg
}

// TestTicksAtTheIntervalUntilTheWindowEnds: after an endpoint becomes
// READY the policy re-publishes its picker exactly every interval (a
// hundredth of a 10 s window), not a nanosecond sooner, and once the
// window has passed it stops: no timer is left.
func TestTicksAtTheIntervalUntilTheWindowEnds(t *testing.T) {
	h, cfg := rampingRR(t)
	if err := h.UpdateAddresses(cfg, resolver.Address{Addr: "a"}, resolver.Address{Addr: "b"}); err != nil {
		t.Fatal(err)
	}
	h.SubConn(1).Ready()
	const interval = 100 * time.Millisecond
	if got := (slowstart.Config{SlowStartWindow: 10 * time.Second}).Interval(); got != interval {
		t.Fatalf("Interval = %v, want %v", got, interval)
	}
	h.CC.States.Drain()
	for i := 1; i <= 100; i++ {
		h.Advance(interval - 1)
		if n := h.CC.States.Pending(); n != 0 {
			t.Fatalf("tick %d: %d pickers published 1 ns early", i, n)
		}
		h.Advance(1)
		if n := len(h.CC.States.Drain()); n != 1 {
			t.Fatalf("tick %d: %d pickers published at the interval, want 1", i, n)
		}
	}
	if next, ok := h.Serializer.NextDeadline(); ok {
		t.Fatalf("a timer is still pending at %v after the window", next)
	}
}

// TestReturnToReadyRestartsTheRamp: an endpoint that loses its connection
// and comes back ramps again from its floor (A100's ready_since).
func TestReturnToReadyRestartsTheRamp(t *testing.T) {
	h, cfg := rampingRR(t)
	if err := h.UpdateAddresses(cfg, resolver.Address{Addr: "a"}, resolver.Address{Addr: "b"}); err != nil {
		t.Fatal(err)
	}
	b := h.SubConn(1)
	b.Ready()
	h.Advance(11 * time.Second)
	share := func() int {
		counts, err := lbtest.CountPicks(h.State().Picker, 1100)
		if err != nil {
			t.Fatal(err)
		}
		return counts[b]
	}
	if got := share(); got != 550 {
		t.Fatalf("after the window b got %d of 1100 picks, want 550", got)
	}
	b.Idle()
	b.Ready()
	if got := share(); got != 100 { // weights 1000 and 100
		t.Fatalf("back to READY, b got %d of 1100 picks, want 100", got)
	}
}

// TestRemovingSlowStartStopsTheTicks: an update without slowStartConfig
// ends every ramp at once and leaves no timer.
func TestRemovingSlowStartStopsTheTicks(t *testing.T) {
	h, cfg := rampingRR(t)
	addrs := []resolver.Address{{Addr: "a"}, {Addr: "b"}}
	if err := h.UpdateAddresses(cfg, addrs...); err != nil {
		t.Fatal(err)
	}
	h.SubConn(1).Ready()
	if _, ok := h.Serializer.NextDeadline(); !ok {
		t.Fatal("no tick pending while b ramps")
	}
	if err := h.UpdateAddresses(roundrobin.Config{}, addrs...); err != nil {
		t.Fatal(err)
	}
	if next, ok := h.Serializer.NextDeadline(); ok {
		t.Fatalf("a timer is pending at %v without slow start", next)
	}
	counts, _ := lbtest.CountPicks(h.State().Picker, 10)
	if counts[h.SubConn(1)] != 5 {
		t.Fatalf("b got %d of 10 picks without slow start, want 5", counts[h.SubConn(1)])
	}
}

// TestInvalidGoConfigIsRejected: a Config built in Go skips the parser;
// each policy rejects a bad one with a *lb.ConfigError under
// slowStartConfig and keeps its state.
func TestInvalidGoConfigIsRejected(t *testing.T) {
	bad := &slowstart.Config{SlowStartWindow: time.Second, Aggression: 0, MinWeightPercent: 10}
	for name, cfg := range map[string]lb.Config{
		roundrobin.Name:   roundrobin.Config{SlowStart: bad},
		wrr.Name:          wrr.Config{SlowStart: bad},
		leastrequest.Name: leastrequest.Config{SlowStart: bad},
		peakewma.Name:     peakewma.Config{SlowStart: bad},
	} {
		h := lbtest.New(t)
		h.BuildPolicy(name, `{}`)
		err := h.UpdateAddresses(cfg, resolver.Address{Addr: "a"})
		lbtest.WantConfigError(t, name, err, "slowStartConfig.aggression")
		if !errors.Is(err, lb.ErrBadResolverState) {
			t.Errorf("%s: error %v does not wrap lb.ErrBadResolverState", name, err)
		}
		if n := len(h.CC.SubConns()); n != 0 {
			t.Errorf("%s: %d SubConns after a rejected update", name, n)
		}
	}
}

// TestLeastRequestScalesLoadByFactor: least_request compares
// (outstanding+1)/factor while an endpoint ramps, so with every request
// held, a new endpoint at its 10% floor holds about a tenth of a warm
// one's requests (choiceCount 10: both endpoints are almost always
// sampled).
func TestLeastRequestScalesLoadByFactor(t *testing.T) {
	h := lbtest.New(t)
	_, plain := h.BuildPolicy(leastrequest.Name, `{"choiceCount": 10}`)
	cfg, _, err := lb.ParseConfig(leastrequest.Builder{}, []byte(`{"choiceCount": 10, "slowStartConfig": {"slowStartWindow": "60s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	addrs := []resolver.Address{{Addr: "a"}, {Addr: "b"}}
	if err := h.UpdateAddresses(plain, addrs[0]); err != nil {
		t.Fatal(err)
	}
	h.SubConn(0).Ready()
	if err := h.UpdateAddresses(cfg, addrs...); err != nil {
		t.Fatal(err)
	}
	h.SubConn(1).Ready()
	p := h.State().Picker
	held := map[lb.SubConn]int{}
	for range 1100 {
		r, err := p.Pick(lb.PickInfo{})
		if err != nil {
			t.Fatal(err)
		}
		held[r.SubConn]++ // Done is never called: every request stays outstanding
	}
	a, b := held[h.SubConn(0)], held[h.SubConn(1)]
	if b < 80 || b > 120 {
		t.Fatalf("new endpoint holds %d of 1100 requests (warm one %d), want about 100 (factor 1/60 floored at 10%%)", b, a)
	}
}

// TestLeastRequestDrawsByFactor: while endpoints ramp, least_request draws
// its two candidates in proportion to their factors, so at low load (every
// request done before the next pick) a new endpoint at factor f, which
// loses every comparison with an idle warm one, is picked only when both
// draws are new: with three warm endpoints and one new, (f/(3+f))² of the
// picks, not the (1/4)² uniform draws would give (docs/choices.md).
func TestLeastRequestDrawsByFactor(t *testing.T) {
	h := lbtest.New(t)
	_, plain := h.BuildPolicy(leastrequest.Name, `{}`)
	cfg, _, err := lb.ParseConfig(leastrequest.Builder{}, []byte(`{"slowStartConfig": {"slowStartWindow": "10s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	addrs := []resolver.Address{{Addr: "a"}, {Addr: "b"}, {Addr: "c"}, {Addr: "new"}}
	if err := h.UpdateAddresses(plain, addrs[:3]...); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		h.SubConn(i).Ready()
	}
	if err := h.UpdateAddresses(cfg, addrs...); err != nil {
		t.Fatal(err)
	}
	h.SubConn(3).Ready()
	const picks = 40_000
	for _, step := range []struct {
		advance time.Duration
		factor  float64
	}{{0, 0.1}, {5 * time.Second, 0.5}} {
		h.Advance(step.advance)
		p, n := h.State().Picker, 0
		for range picks {
			r, err := p.Pick(lb.PickInfo{})
			if err != nil {
				t.Fatal(err)
			}
			if r.SubConn == h.SubConn(3) {
				n++
			}
			r.Done(lb.DoneInfo{})
		}
		q := step.factor / (3 + step.factor)
		if want := picks * q * q; math.Abs(float64(n)-want) > 4*math.Sqrt(want)+2 {
			t.Errorf("factor %v: new endpoint picked %d times of %d, want about %.0f (uniform draws: %d)", step.factor, n, picks, want, picks/16)
		}
	}
}
