package peakewma

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// tickDur is one tick of the estimate's clock: tests advance the mock
// clock by whole ticks, so the model's times are exact.
const tickDur = time.Duration(1) << tickBits

// addrs returns n addresses e0..e(n-1).
func addrs(n int) []resolver.Address {
	as := make([]resolver.Address, n)
	for i := range as {
		as[i] = resolver.Address{Addr: fmt.Sprintf("e%d", i)}
	}
	return as
}

// readyHarness returns a harness over n READY endpoints with cfg.
func readyHarness(t *testing.T, cfg Config, n int) *lbtest.Harness {
	t.Helper()
	h := lbtest.New(t)
	h.Build(Builder{})
	if err := h.UpdateAddresses(cfg, addrs(n)...); err != nil {
		t.Fatal(err)
	}
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	return h
}

// data returns the balancer's data for each endpoint, in update order.
func data(h *lbtest.Harness) []*endpointData {
	var ds []*endpointData
	h.Do(func() {
		for _, ep := range h.Balancer.(*balancer).Endpoints() {
			ds = append(ds, &ep.Data)
		}
	})
	return ds
}

// estimate returns d's estimate, undecayed, in ns.
func estimate(d *endpointData) float64 {
	est, _ := estimateOf(d.state.Load())
	return est
}

// setEstimate gives d the estimate est at the meter's current time.
func setEstimate(h *lbtest.Harness, d *endpointData, est time.Duration) {
	h.Do(func() { d.state.Store(pack(float64(est), tick(d.m.now()))) })
}

// near reports whether a and b agree to float32 precision.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b)) }

// TestNewEndpointStartsAtTheMedian: a new endpoint's estimate is the median
// of the others' decayed estimates (the mean of the middle two for an even
// count), and DefaultRTT when it is the first.
func TestNewEndpointStartsAtTheMedian(t *testing.T) {
	cfg := Config{DefaultRTT: 30 * time.Millisecond}
	h := readyHarness(t, cfg, 3)
	for i, d := range data(h) {
		if got := estimate(d); got != float64(30*time.Millisecond) {
			t.Fatalf("first endpoint %d starts at %v, want DefaultRTT 30ms", i, time.Duration(got))
		}
	}
	ds := data(h)
	for i, est := range []time.Duration{90 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
		setEstimate(h, ds[i], est)
	}
	if err := h.UpdateAddresses(cfg, addrs(4)...); err != nil {
		t.Fatal(err)
	}
	if got := estimate(data(h)[3]); got != float64(20*time.Millisecond) {
		t.Fatalf("fourth endpoint starts at %v, want the median 20ms", time.Duration(got))
	}
	setEstimate(h, data(h)[3], 40*time.Millisecond) // 10, 20, 40, 90: median 30
	// One decay time later every estimate is 1/e of itself, and so is the
	// median the fifth starts from.
	h.Advance(9537 * tickDur) // about τ, in whole ticks
	if err := h.UpdateAddresses(cfg, addrs(5)...); err != nil {
		t.Fatal(err)
	}
	w := math.Exp(-float64(9537*tickDur) / float64(DefaultDecayTime))
	if got, want := estimate(data(h)[4]), float64(30*time.Millisecond)*w; !near(got, want) {
		t.Fatalf("fifth endpoint starts at %v, want the decayed median %v", time.Duration(got), time.Duration(want))
	}
}

// flight is a request in flight in a closed loop: its endpoint's index and
// its Done.
type flight struct {
	i    int
	done func(lb.DoneInfo)
}

// TestNewEndpointIsNeitherFloodedNorStarved: four endpoints answering in
// 100 ms carry a closed loop of 40 requests; a fifth, as fast, joins. Over
// the next 1,000 requests it gets between half and twice its fair share
// (a fifth), and in the first 100 at most twice it: a start of zero would
// flood it, a high start starve it. (Each step advances the mock clock,
// which sleeps 1 ms of real time: the loop is kept short.)
func TestNewEndpointIsNeitherFloodedNorStarved(t *testing.T) {
	h := readyHarness(t, Config{}, 4)
	info := lb.PickInfo{Ctx: context.Background()}
	scs := map[lb.SubConn]int{}
	for i, sc := range h.CC.SubConns() {
		scs[sc] = i
	}
	var loop []flight
	pick := func() {
		r, err := h.State().Picker.Pick(info)
		if err != nil {
			t.Fatal(err)
		}
		loop = append(loop, flight{scs[r.SubConn], r.Done})
	}
	// step ends the oldest request, 2.5 ms later (40 in flight, 100 ms
	// each), and starts the next.
	step := func() int {
		h.Advance(2500 * time.Microsecond)
		loop[0].done(lb.DoneInfo{})
		loop = loop[1:]
		pick()
		return loop[len(loop)-1].i
	}
	for range 40 {
		pick()
	}
	for range 200 {
		step()
	}
	if err := h.UpdateAddresses(nil, addrs(5)...); err != nil {
		t.Fatal(err)
	}
	h.SubConn(4).Ready()
	scs[h.SubConn(4)] = 4
	first, total := 0, 0
	for k := range 1000 {
		if step() == 4 {
			total++
			if k < 100 {
				first++
			}
		}
	}
	t.Logf("new endpoint: %d of the first 100 requests, %d of 1000", first, total)
	if first > 40 || total < 100 || total > 400 {
		t.Fatalf("new endpoint got %d of the first 100 requests and %d of 1000, want at most 40 and 100 to 400", first, total)
	}
}

// TestFailureRaisesTheCost: a failed request adds FailurePenalty to its
// sample, so the endpoint's estimate becomes its round trip plus the
// penalty and the next picks avoid it.
func TestFailureRaisesTheCost(t *testing.T) {
	h := readyHarness(t, Config{FailurePenalty: 500 * time.Millisecond}, 2)
	ds := data(h)
	p := h.State().Picker
	r, err := p.Pick(lb.PickInfo{})
	if err != nil {
		t.Fatal(err)
	}
	failed := ds[0]
	if r.SubConn != h.SubConn(0) {
		failed = ds[1]
	}
	h.Advance(8 * tickDur)
	r.Done(lb.DoneInfo{Err: errors.New("503")})
	if got, want := estimate(failed), float64(8*tickDur+500*time.Millisecond); !near(got, want) {
		t.Fatalf("estimate after a failure %v, want the round trip plus the penalty %v", time.Duration(got), time.Duration(want))
	}
	for range 100 {
		r, err := p.Pick(lb.PickInfo{})
		if err != nil || r.SubConn == failed.sc {
			t.Fatalf("Pick = %v, %v; want the endpoint that did not fail", r.SubConn, err)
		}
		r.Done(lb.DoneInfo{})
	}
}

// TestRequestNotSentLeavesNoSample: a pick released with
// lb.ErrRequestNotSent counts the request down and leaves the estimate as
// it was, however long it was held.
func TestRequestNotSentLeavesNoSample(t *testing.T) {
	h := readyHarness(t, Config{}, 1)
	d := data(h)[0]
	before := d.state.Load()
	r, err := h.State().Picker.Pick(lb.PickInfo{})
	if err != nil || d.pending() != 1 {
		t.Fatalf("Pick = %v, %d in flight", err, d.pending())
	}
	h.Advance(time.Second)
	r.Done(lb.DoneInfo{Err: fmt.Errorf("discarded: %w", lb.ErrRequestNotSent)})
	if d.pending() != 0 || d.state.Load() != before {
		t.Fatalf("after a request not sent: %d in flight, state %#x; want 0 and %#x", d.pending(), d.state.Load(), before)
	}
}

// TestPeakAndDecayOnTheInjectedClock: a sample above the decayed estimate
// replaces it; one below is blended in by 1-exp(-Δ/τ); between samples the
// estimate decays by e every τ, as the injected clock moves.
func TestPeakAndDecayOnTheInjectedClock(t *testing.T) {
	h := readyHarness(t, Config{DecayTime: time.Second, DefaultRTT: 10 * tickDur}, 1)
	d := data(h)[0]
	p := h.State().Picker
	sample := func(rtt time.Duration, err error) {
		r, _ := p.Pick(lb.PickInfo{})
		h.Advance(rtt)
		r.Done(lb.DoneInfo{Err: err})
	}
	sample(100*tickDur, nil) // above 10 ticks decayed: the peak
	if got := estimate(d); got != float64(100*tickDur) {
		t.Fatalf("after a peak: %v, want %v", time.Duration(got), 100*tickDur)
	}
	// 400 ticks later, a sample of 10 ticks... after 400 more ticks of
	// idleness: Δ = 410 ticks.
	h.Advance(400 * tickDur)
	w := math.Exp(-float64(410*tickDur) / float64(time.Second))
	sample(10*tickDur, nil)
	if got, want := estimate(d), float64(100*tickDur)*w+float64(10*tickDur)*(1-w); !near(got, want) {
		t.Fatalf("after a blend: %v, want %v", time.Duration(got), time.Duration(want))
	}
	est := estimate(d)
	h.Advance(954 * tickDur) // about τ, in whole ticks
	want := est * math.Exp(-float64(954*tickDur)/float64(time.Second))
	if got, _ := d.cost(d.m.now(), p.(*picker).decay); !near(got, want) {
		t.Fatalf("cost one τ later %v, want %v", time.Duration(got), time.Duration(want))
	}
}

// TestStalledEndpointCostsItsOldestRequest: requests in flight that no
// completion has followed for t make the estimate at least t.
func TestStalledEndpointCostsItsOldestRequest(t *testing.T) {
	h := readyHarness(t, Config{DefaultRTT: 10 * time.Millisecond}, 1)
	d := data(h)[0]
	p := h.State().Picker.(*picker)
	if _, err := p.Pick(lb.PickInfo{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pick(lb.PickInfo{}); err != nil {
		t.Fatal(err)
	}
	h.Advance(500 * time.Millisecond)
	got, pending := d.cost(d.m.now(), p.decay)
	// Known since the end of the creation's tick.
	if want := float64(500*time.Millisecond-tickDur) * 3; pending != 2 || !near(got, want) {
		t.Fatalf("cost %v with %d in flight, want %v with 2", time.Duration(got), pending, time.Duration(want))
	}
}

// TestStallFollowsTheOldestRequest: the stall is the age of the oldest
// request in flight, from the end of its pick's tick, whichever request
// completes. Requests picked before a fault that complete after it, while
// an older one is still in flight, leave the stall at the older one's age
// (the O(1) bound before issue 26's fourth pass restarted it at each
// completion); the oldest's completion, with a sample or not sent, moves
// it to the next oldest.
func TestStallFollowsTheOldestRequest(t *testing.T) {
	h := readyHarness(t, Config{DefaultRTT: tickDur, FailurePenalty: tickDur}, 1)
	d := data(h)[0]
	p := h.State().Picker.(*picker)
	stall := func(ticks int) {
		t.Helper()
		want := time.Duration(ticks) * tickDur
		got, pending := d.cost(d.m.now(), p.decay)
		if s := time.Duration(d.stall(d.m.now())); s != want || !near(got, float64(want)*float64(pending+1)) {
			t.Fatalf("stall %v, cost %v with %d in flight; want a stall of %v (%d ticks), the cost's estimate", s, time.Duration(got), pending, want, ticks)
		}
	}
	at := func(n int) { h.Advance(time.Duration(n)*tickDur - time.Duration(d.m.now())) }
	pick := func(n int) lb.PickResult {
		at(n)
		r, _ := p.Pick(lb.PickInfo{})
		return r
	}
	a, b, c := pick(10), pick(20), pick(30) // before the fault
	at(100)
	b.Done(lb.DoneInfo{}) // after it, a sample of 80 ticks
	at(150)
	stall(150 - 11)                                // a's age, not the 50 ticks since b's completion
	c.Done(lb.DoneInfo{Err: errors.New("failed")}) // tick 150
	at(200)
	stall(200 - 11)
	e := pick(205)
	a.Done(lb.DoneInfo{}) // tick 205: e is the oldest
	at(800)
	stall(800 - 206)
	f := pick(810)
	e.Done(lb.DoneInfo{Err: fmt.Errorf("discarded: %w", lb.ErrRequestNotSent)}) // tick 810
	at(1500)
	stall(1500 - 811)
	g := pick(1510) // beside f, which holds slot 1
	f.Done(lb.DoneInfo{})
	at(2500)
	stall(2500 - 1511)
	g.Done(lb.DoneInfo{})
	if d.pending() != 0 || d.held.Load() != 0 {
		t.Fatalf("%d in flight, held %#x, after every Done", d.pending(), d.held.Load())
	}
}

// TestStallBeyondTheSlots: requests beyond the slots are not measured; the
// release of one leaves the stall at the oldest measured request's age,
// and while only unmeasured ones are in flight the stall is the time since
// the release that left no slot held, a lower bound of their age.
func TestStallBeyondTheSlots(t *testing.T) {
	h := readyHarness(t, Config{DefaultRTT: tickDur}, 1)
	d := data(h)[0]
	p := h.State().Picker.(*picker)
	h.Advance(10 * tickDur)
	var rs []lb.PickResult
	for range slotCount + 2 { // at tick 10; the last two are not measured
		r, _ := p.Pick(lb.PickInfo{})
		rs = append(rs, r)
	}
	h.Advance(100 * tickDur)
	rs[slotCount].Done(lb.DoneInfo{}) // tick 110
	h.Advance(50 * tickDur)
	got, pending := d.cost(d.m.now(), p.decay)
	if want := float64(149*tickDur) * float64(slotCount+2); pending != slotCount+1 || got != want {
		t.Fatalf("cost %v with %d in flight, want %v with %d", time.Duration(got), pending, time.Duration(want), slotCount+1)
	}
	for _, r := range rs[:slotCount] { // tick 160
		r.Done(lb.DoneInfo{})
	}
	h.Advance(40 * tickDur)
	if got, want := time.Duration(d.stall(d.m.now())), 39*tickDur; d.pending() != 1 || got != want {
		t.Fatalf("stall %v with %d in flight (one not measured, 190 ticks old), want %v", got, d.pending(), want)
	}
	rs[slotCount+1].Done(lb.DoneInfo{})
}

// TestStallUnderConcurrency: goroutines pick and complete requests on one
// endpoint at once, at one clock time per phase, and the clock moves
// between phases. Within a phase every race between picks and releases
// reads the same time, so between phases the stall must be exact: the age
// of the oldest request in flight, from the end of its phase's tick. The
// race detector checks the slots' and the witness's accesses.
func TestStallUnderConcurrency(t *testing.T) {
	const goroutines, most = 4, 15 // at most 60 in flight: every one measured
	h := readyHarness(t, Config{DefaultRTT: tickDur}, 1)
	d := data(h)[0]
	p := h.State().Picker.(*picker)
	type request struct {
		r  lb.PickResult
		at int64
	}
	held := make([][]request, goroutines)
	for phase := range 200 {
		h.Advance(time.Duration(1+phase%7) * tickDur)
		now := d.m.now()
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func(rng *rand.Rand) {
				defer wg.Done()
				for range 20 {
					mine := held[g]
					if k := len(mine); k == most || (k > 0 && rng.IntN(2) == 0) {
						i := rng.IntN(k)
						di := lb.DoneInfo{}
						if rng.IntN(4) == 0 {
							di.Err = lb.ErrRequestNotSent
						}
						mine[i].r.Done(di)
						held[g] = slices.Delete(mine, i, i+1)
						continue
					}
					r, _ := p.Pick(lb.PickInfo{})
					held[g] = append(mine, request{r, now})
				}
			}(rand.New(rand.NewPCG(uint64(phase), uint64(g))))
		}
		wg.Wait()
		oldest, n := int64(math.MaxInt64), 0
		for _, rs := range held {
			for _, r := range rs {
				oldest = min(oldest, r.at)
				n++
			}
		}
		if n == 0 {
			continue
		}
		if got, want := d.stall(now), now-(oldest>>tickBits+1)<<tickBits; d.pending() != int64(n) || got != want {
			t.Fatalf("phase %d: stall %v with %d in flight, want %v with %d", phase, time.Duration(got), d.pending(), time.Duration(want), n)
		}
	}
	for _, rs := range held {
		for _, r := range rs {
			r.r.Done(lb.DoneInfo{})
		}
	}
}

// TestDoneTwiceCountsOnce: a second Done of one pick changes nothing.
func TestDoneTwiceCountsOnce(t *testing.T) {
	h := readyHarness(t, Config{}, 1)
	d := data(h)[0]
	p := h.State().Picker
	r1, _ := p.Pick(lb.PickInfo{})
	_, _ = p.Pick(lb.PickInfo{})
	r1.Done(lb.DoneInfo{})
	st := d.state.Load()
	r1.Done(lb.DoneInfo{Err: errors.New("again")})
	if d.pending() != 1 || d.state.Load() != st {
		t.Fatalf("after a second Done: %d in flight (want 1), state changed %v", d.pending(), d.state.Load() != st)
	}
}

// TestSlotsRunOut: an endpoint measures up to slotCount requests in
// flight at once; beyond them requests are counted, not measured, and
// every Done counts one down.
func TestSlotsRunOut(t *testing.T) {
	h := readyHarness(t, Config{}, 1)
	d := data(h)[0]
	p := h.State().Picker
	var rs []lb.PickResult
	for range slotCount + 10 {
		r, _ := p.Pick(lb.PickInfo{})
		rs = append(rs, r)
	}
	if d.pending() != int64(len(rs)) || d.overflow.Load() != 10 || d.chunks[chunkCount-1].Load() == nil {
		t.Fatalf("%d in flight, %d unmeasured, last chunk made %v", d.pending(), d.overflow.Load(), d.chunks[chunkCount-1].Load() != nil)
	}
	for _, r := range rs {
		r.Done(lb.DoneInfo{})
	}
	if d.pending() != 0 || d.held.Load() != 0 || d.overflow.Load() != 0 {
		t.Fatalf("after every Done: %d in flight (held %#x, overflow %d), want 0", d.pending(), d.held.Load(), d.overflow.Load())
	}
}

// TestConcurrentPicks picks and finishes requests from several goroutines,
// while the policy rebuilds its picker; the
// race detector checks the contract, and at the end every counter is 0
// and every slot is free.
func TestConcurrentPicks(t *testing.T) {
	h := readyHarness(t, Config{}, 3)
	err := lbtest.PickConcurrently(h.CC, 4, func(lb.PickResult) error { return nil }, func() {
		for i := range 100 {
			sc := h.SubConn(i % 3)
			sc.Idle()
			sc.Connecting()
			sc.Ready()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range data(h) {
		if d.pending() != 0 {
			t.Errorf("%v: %d requests counted after every Done", d.sc, d.pending())
		}
		if d.held.Load() != 0 || d.overflow.Load() != 0 {
			t.Errorf("%v: slots held %#x, overflow %d after every Done", d.sc, d.held.Load(), d.overflow.Load())
		}
	}
}

// TestPickDoesNotAllocate: a READY pick and its Done allocate nothing once
// the endpoints have slots for the requests in flight.
func TestPickDoesNotAllocate(t *testing.T) {
	h := readyHarness(t, Config{}, 2)
	wantNoAllocs(t, h.State().Picker)
}

// wantNoAllocs fails t unless a pick from p and its Done allocate nothing.
func wantNoAllocs(t *testing.T, p lb.Picker) {
	t.Helper()
	info := lb.PickInfo{Ctx: context.Background()}
	if n := testing.AllocsPerRun(1000, func() {
		r, _ := p.Pick(info)
		r.Done(lb.DoneInfo{})
	}); n != 0 {
		t.Fatalf("%v allocations per pick and Done, want 0", n)
	}
}
