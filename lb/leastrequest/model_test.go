package leastrequest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// request is a picked request not yet done.
type request struct {
	sc   lb.SubConn
	done func(lb.DoneInfo)
}

// machine drives one least_request_experimental balancer with random
// updates, SubConn state changes, picks and request completions, against a
// model written from A48's text:
//
//   - the picker is given "a list of all subchannels with the READY state"
//     (here: in update order, de-duplicated);
//   - each pick samples choiceCount of them, "random_integer(0,
//     subchannels.length)" each time, keeps the first sampled and replaces
//     the candidate only by one with strictly fewer active requests;
//   - a subchannel's counter is incremented by a pick and decremented when
//     the request finishes, and it shares the subchannel's lifecycle (not
//     the picker's).
//
// The random numbers themselves are the picker's (its wyrand sequence); the
// model reads the indices the picker will sample before each pick and
// applies A48's rule to them. TestSamplingIsUniform checks the numbers.
type machine struct {
	h      *lbtest.Harness
	cfg    Config
	model  *lbtest.EndpointModel
	active map[lb.SubConn]int64 // outstanding requests per SubConn
	open   []request
}

func newMachine(t *rapid.T) *machine {
	m := &machine{
		cfg:    Config{ChoiceCount: uint32(rapid.IntRange(2, 10).Draw(t, "choiceCount"))},
		h:      lbtest.New(t, lbtest.WithSeed(rapid.Uint64().Draw(t, "seed"))),
		active: map[lb.SubConn]int64{},
	}
	m.h.Build(Builder{})
	m.model = lbtest.NewEndpointModel(m.h, lbtest.Pool(5)...)
	return m
}

func (m *machine) update(t *rapid.T) { m.model.DrawUpdate(t, m.cfg) }

func (m *machine) report(t *rapid.T) { m.model.DrawReport(t) }

func (m *machine) pick(t *rapid.T) {
	ready := m.model.Ready()
	st := m.h.State()
	if len(ready) == 0 {
		if st.ConnectivityState == lb.Ready {
			t.Fatalf("state READY with no READY SubConn")
		}
		t.Skip("not READY")
	}
	p, ok := st.Picker.(*picker)
	if !ok || st.ConnectivityState != lb.Ready {
		t.Fatalf("state %v with picker %T, want READY with the policy's picker", st.ConnectivityState, st.Picker)
	}
	if len(p.entries) != len(ready) || p.choices != uint64(m.cfg.ChoiceCount) {
		t.Fatalf("picker over %d entries with %d choices, want %d and %d", len(p.entries), p.choices, len(ready), m.cfg.ChoiceCount)
	}
	// Serial picks never overlap: the picker claims from cursor 0, the
	// sequence from its seed.
	if p.contended.Load() {
		t.Fatalf("picker contended, with no concurrent pick")
	}
	// A48's pseudo-code, on the indices the picker is about to sample:
	// the claim moves cursor 0 by choiceCount numbers, used from the last.
	s := p.cursors[0].next.Load() + uint64(m.cfg.ChoiceCount)*weyl
	var candidate lb.SubConn
	for i := range uint64(m.cfg.ChoiceCount) {
		sampled := ready[p.sample(s-i*weyl)]
		if candidate == nil || m.active[sampled] < m.active[candidate] {
			candidate = sampled
		}
	}
	r, err := p.Pick(lb.PickInfo{Ctx: context.Background()})
	if err != nil || r.SubConn != candidate || r.Done == nil {
		t.Fatalf("Pick = %v, %v; want %v with a Done", r.SubConn, err, candidate)
	}
	m.active[candidate]++
	m.open = append(m.open, request{sc: candidate, done: r.Done})
}

func (m *machine) finish(t *rapid.T) {
	if len(m.open) == 0 {
		t.Skip("no request in flight")
	}
	i := rapid.IntRange(0, len(m.open)-1).Draw(t, "request")
	req := m.open[i]
	m.open = slices.Delete(m.open, i, i+1)
	var err error
	if rapid.Bool().Draw(t, "failed") {
		err = errors.New("request failed") // counted down whatever the outcome
	}
	req.done(lb.DoneInfo{Err: err})
	m.active[req.sc]--
}

// check: every live endpoint's counter is the model's count of its
// outstanding requests, whatever pickers were built meanwhile.
func (m *machine) check(t *rapid.T) {
	m.h.Do(func() {
		for _, ep := range m.h.Balancer.(*balancer).Endpoints() {
			if got, want := ep.Data.active.Load(), m.active[ep.SubConn]; got != want {
				t.Fatalf("%v: %d outstanding requests counted, want %d", ep.SubConn, got, want)
			}
		}
	})
}

// TestPropertyPickerFollowsA48 runs the model.
func TestPropertyPickerFollowsA48(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine(t)
		m.update(t)
		t.Repeat(map[string]func(*rapid.T){
			"update": m.update,
			"report": m.report,
			"pick":   m.pick,
			"finish": m.finish,
			"":       m.check,
		})
	})
}

// TestSamplingIsUniform: the picker's indices are uniform over the entries
// (chi-square over 7 entries) and differ between seeds.
func TestSamplingIsUniform(t *testing.T) {
	const n, draws = 7, 70000
	p := newPicker(make([]*endpointData, n), 2, 12345)
	var counts [n]int
	for k := range uint64(draws) {
		counts[p.sample(12345+k*weyl)]++
	}
	chi2 := 0.0
	for _, c := range counts {
		d := float64(c) - draws/n
		chi2 += d * d / (draws / n)
	}
	// 6 degrees of freedom: P(chi2 > 22.46) = 0.001.
	if chi2 > 22.46 {
		t.Fatalf("counts %v: chi-square %.1f > 22.46", counts, chi2)
	}
	q := newPicker(make([]*endpointData, n), 2, 54321)
	same := 0
	for k := range uint64(100) {
		if p.sample(12345+k*weyl) == q.sample(54321+k*weyl) {
			same++
		}
	}
	if same > 40 {
		t.Fatalf("two seeds agree on %d of 100 indices", same)
	}
}

// TestConcurrentPicks picks and finishes requests from several goroutines
// while the policy rebuilds its picker; the race detector checks the
// picker's contract, and at the end every counter is back to 0: each Done
// counted down exactly the pick it belongs to, across pickers.
func TestConcurrentPicks(t *testing.T) {
	h := lbtest.New(t)
	h.Build(Builder{})
	if err := h.UpdateAddresses(nil, resolver.Address{Addr: "a"}, resolver.Address{Addr: "b"}, resolver.Address{Addr: "c"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		h.SubConn(i).Ready()
	}
	noCheck := func(lb.PickResult) error { return nil }
	err := lbtest.PickConcurrently(h.CC, 4, noCheck, func() {
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
	h.Do(func() {
		for _, ep := range h.Balancer.(*balancer).Endpoints() {
			if n := ep.Data.active.Load(); n != 0 {
				t.Errorf("%v: %d requests counted after every Done", ep.SubConn, n)
			}
		}
	})
}

// TestPickDoesNotAllocate: a READY pick and its Done allocate nothing,
// whether the picker claims from cursor 0 or is contended.
func TestPickDoesNotAllocate(t *testing.T) {
	h := lbtest.New(t)
	h.Build(Builder{})
	if err := h.UpdateAddresses(nil, resolver.Address{Addr: "a"}, resolver.Address{Addr: "b"}); err != nil {
		t.Fatal(err)
	}
	h.SubConn(0).Ready()
	h.SubConn(1).Ready()
	p := h.State().Picker.(*picker)
	info := lb.PickInfo{Ctx: context.Background()}
	for _, contended := range []bool{false, true} {
		p.contended.Store(contended)
		if n := testing.AllocsPerRun(1000, func() {
			r, _ := p.Pick(info)
			r.Done(lb.DoneInfo{})
		}); n != 0 {
			t.Fatalf("contended %v: %v allocations per pick and Done, want 0", contended, n)
		}
	}
}

// TestContendedModeEnds: a contended picker still counts every pick, ends
// contended mode within cursorCount·contendedPeriod picks whichever
// cursors the runtime's generator chooses, and then claims from cursor 0
// again.
func TestContendedModeEnds(t *testing.T) {
	entries := []*endpointData{{}, {}, {}}
	p := newPicker(entries, 2, 7)
	p.contended.Store(true)
	picks := 0
	for p.contended.Load() {
		if picks == cursorCount*contendedPeriod {
			t.Fatalf("still contended after %d serial picks", picks)
		}
		if _, err := p.Pick(lb.PickInfo{}); err != nil {
			t.Fatal(err)
		}
		picks++
	}
	var counted int64
	for _, e := range entries {
		counted += e.active.Load()
	}
	if counted != int64(picks) {
		t.Fatalf("%d picks counted, want %d", counted, picks)
	}
	before := p.cursors[0].next.Load()
	if _, err := p.Pick(lb.PickInfo{}); err != nil {
		t.Fatal(err)
	}
	if got, want := p.cursors[0].next.Load(), before+p.step; got != want || p.contended.Load() {
		t.Fatalf("after contended mode: cursor 0 at %#x (contended %v), want %#x (not contended)", got, p.contended.Load(), want)
	}
}

// TestCountersAreLocalToInstance: two instances of the policy over the same
// addresses count their requests apart (A48: counters are "local to each
// instance"): requests in flight through one do not steer the other.
func TestCountersAreLocalToInstance(t *testing.T) {
	var hs [2]*lbtest.Harness
	for i := range hs {
		hs[i] = lbtest.New(t)
		hs[i].Build(Builder{})
		if err := hs[i].UpdateAddresses(Config{ChoiceCount: 10}, resolver.Address{Addr: "a"}, resolver.Address{Addr: "b"}); err != nil {
			t.Fatal(err)
		}
		hs[i].SubConn(0).Ready()
	}
	// Three requests in flight on a, through the first instance only.
	for range 3 {
		if _, err := hs[0].State().Picker.Pick(lb.PickInfo{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range hs {
		hs[i].SubConn(1).Ready()
		var counts [2]int64
		hs[i].Do(func() {
			for j, ep := range hs[i].Balancer.(*balancer).Endpoints() {
				counts[j] = ep.Data.active.Load()
			}
		})
		if want := [2]int64{3 * int64(1-i), 0}; counts != want {
			t.Fatalf("instance %d counts %v, want %v", i, counts, want)
		}
	}
}
