package clusterimpl

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// env is a clusterimpl balancer over test_leaf children.
type env struct {
	t testing.TB
	p *lbtest.Parent
}

func newEnv(t testing.TB, seed uint64) *env {
	p := lbtest.NewParent(t, lbtest.WithSeed(seed))
	p.Build(Builder{})
	return &env{t: t, p: p}
}

// ready applies config (its childPolicy is test_leaf) over one address and
// makes it READY, returning the published picker.
func (e *env) ready(config string) lb.Picker {
	e.t.Helper()
	if err := e.p.UpdateAddresses(e.p.ParseConfig(Name, config), resolver.Address{Addr: "10.0.0.1:80"}); err != nil {
		e.t.Fatal(err)
	}
	e.p.CC.SubConns()[0].Ready()
	return e.p.WantState(lb.Ready).Picker
}

// Each category drops its share of the requests that reach it, one after
// the other (Envoy's ClusterLoadAssignment.Policy): 10% then 50% of the
// remaining 90% gives 10%, 45% and 45% passed. With a fixed seed the
// counts are exact; they lie within 4 standard deviations of the shares.
func TestDropSharesWithAFixedSeed(t *testing.T) {
	e := newEnv(t, 42)
	pk := e.ready(`{"cluster": "c", "dropCategories": [
		{"category": "throttle", "requestsPerMillion": 100000},
		{"category": "lb", "requestsPerMillion": 500000}], "childPolicy": [{"test_leaf": {}}]}`)
	const n = 100000
	counts := map[string]int{}
	for range n {
		r, err := pk.Pick(lb.PickInfo{Ctx: t.Context()})
		switch {
		case err == nil:
			counts["passed"]++
			if r.Done != nil {
				r.Done(lb.DoneInfo{})
			}
		case !errors.Is(err, lb.ErrDropped):
			t.Fatalf("pick failed with %v, not a drop", err)
		case strings.Contains(err.Error(), `drop category "throttle" (10% of requests`):
			counts["throttle"]++
		case strings.Contains(err.Error(), `drop category "lb" (50% of requests`):
			counts["lb"]++
		default:
			t.Fatalf("drop error %q names no category", err)
		}
	}
	for name, share := range map[string]float64{"throttle": 0.10, "lb": 0.45, "passed": 0.45} {
		sd := math.Sqrt(n * share * (1 - share))
		if got := float64(counts[name]); math.Abs(got-n*share) > 4*sd {
			t.Errorf("%s: %d of %d picks, want %.0f ± %.0f", name, counts[name], n, n*share, 4*sd)
		}
	}
	m, target := e.p.Metrics, e.p.CC.Target()
	m.Want(t, int64(counts["throttle"]), MetricDrops.Name, target, "c", "throttle")
	m.Want(t, int64(counts["lb"]), MetricDrops.Name, target, "c", "lb")
	t.Logf("seed 42: %v", counts)
}

// A seed replays the same drops: the draws are the picker's own sequence.
func TestDropsReplayForASeed(t *testing.T) {
	run := func() string {
		e := newEnv(t, 7)
		pk := e.ready(`{"dropCategories": [{"category": "x", "requestsPerMillion": 300000}], "childPolicy": [{"test_leaf": {}}]}`)
		var b strings.Builder
		for range 200 {
			if _, err := pk.Pick(lb.PickInfo{}); err != nil {
				b.WriteByte('d')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	if a, b := run(), run(); a != b {
		t.Errorf("two runs with seed 7 differ:\n%s\n%s", a, b)
	}
}

// Drops apply only while the child is READY: a pick that queues is not
// dropped, and nothing is counted.
func TestNoDropsUnlessReady(t *testing.T) {
	e := newEnv(t, 1)
	cfg := e.p.ParseConfig(Name, `{"cluster": "c", "dropCategories": [{"category": "all", "requestsPerMillion": 1000000}], "childPolicy": [{"test_leaf": {}}]}`)
	if err := e.p.UpdateAddresses(cfg, resolver.Address{Addr: "10.0.0.1:80"}); err != nil {
		t.Fatal(err)
	}
	pk := e.p.State().Picker
	if _, err := pk.Pick(lb.PickInfo{}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Fatalf("pick before READY: %v, want it queued", err)
	}
	e.p.Metrics.Want(t, 0, MetricDrops.Name, e.p.CC.Target(), "c", "all")
	e.p.CC.SubConns()[0].Ready()
	_, err := e.p.WantState(lb.Ready).Picker.Pick(lb.PickInfo{})
	if !errors.Is(err, lb.ErrDropped) || lb.ClassifyPickError(err) != lb.PickFail {
		t.Fatalf("pick when READY: %v, want a drop that fails even wait-for-ready", err)
	}
	e.p.Metrics.Want(t, 1, MetricDrops.Name, e.p.CC.Target(), "c", "all")
}

// The circuit breaker: maxConcurrentRequests picks may be in flight; the
// next fails, even wait-for-ready, naming the limit, and is counted; a
// Done frees a place. The count carries over a new picker and a new
// config, as gRFC A32 describes for a lowered limit.
func TestCircuitBreakerCapsRequestsInFlight(t *testing.T) {
	e := newEnv(t, 1)
	pk := e.ready(`{"cluster": "c", "maxConcurrentRequests": 2, "childPolicy": [{"test_leaf": {}}]}`)
	var dones []func(lb.DoneInfo)
	for range 2 {
		r, err := pk.Pick(lb.PickInfo{})
		if err != nil || r.Done == nil {
			t.Fatalf("pick under the limit: %v (Done %v)", err, r.Done != nil)
		}
		dones = append(dones, r.Done)
	}
	_, err := pk.Pick(lb.PickInfo{})
	if !errors.Is(err, ErrOverLimit) || lb.ClassifyPickError(err) != lb.PickFail || !strings.Contains(err.Error(), `cluster "c": 2 requests in flight`) {
		t.Fatalf("third pick: %v, want a drop over the limit naming it", err)
	}
	e.p.Metrics.Want(t, 1, MetricCircuitBreakerDrops.Name, e.p.CC.Target(), "c")
	dones[0](lb.DoneInfo{})
	r, err := pk.Pick(lb.PickInfo{})
	if err != nil {
		t.Fatalf("pick after a Done: %v", err)
	}
	dones[0] = r.Done
	// A lowered limit, in a new config: the 2 in flight keep new picks out
	// until only 0 remain.
	if err := e.p.UpdateAddresses(e.p.ParseConfig(Name, `{"cluster": "c", "maxConcurrentRequests": 1, "childPolicy": [{"test_leaf": {}}]}`), resolver.Address{Addr: "10.0.0.1:80"}); err != nil {
		t.Fatal(err)
	}
	pk = e.p.WantState(lb.Ready).Picker
	dones[0](lb.DoneInfo{})
	if _, err := pk.Pick(lb.PickInfo{}); !errors.Is(err, ErrOverLimit) {
		t.Fatalf("pick with 1 in flight and a limit of 1: %v, want over the limit", err)
	}
	dones[1](lb.DoneInfo{Err: lb.ErrRequestNotSent})
	if _, err := pk.Pick(lb.PickInfo{}); err != nil {
		t.Fatalf("pick with none in flight: %v", err)
	}
	e.p.Metrics.Want(t, 2, MetricCircuitBreakerDrops.Name, e.p.CC.Target(), "c")
}

// A child's failing picker is published as it is while the child is not
// READY: nothing to drop or count.
func TestFailingChildPickerPassesThrough(t *testing.T) {
	e := newEnv(t, 1)
	cfg := e.p.ParseConfig(Name, `{"maxConcurrentRequests": 0, "childPolicy": [{"test_script": {"id": "s"}}]}`)
	if err := e.p.UpdateAddresses(cfg); err != nil {
		t.Fatal(err)
	}
	e.p.Report("s", lb.TransientFailure, "down")
	e.p.WantPicker(lb.TransientFailure, "down")
}

// A pick with drops and a limit, and its Done, allocate nothing.
func TestPickDoesNotAllocate(t *testing.T) {
	e := newEnv(t, 1)
	pk := e.ready(`{"cluster": "c", "maxConcurrentRequests": 10, "dropCategories": [{"category": "x", "requestsPerMillion": 1}], "childPolicy": [{"test_leaf": {}}]}`)
	info := lb.PickInfo{Ctx: t.Context()}
	if n := testing.AllocsPerRun(1000, func() {
		if r, err := pk.Pick(info); err == nil {
			r.Done(lb.DoneInfo{})
		}
	}); n != 0 {
		t.Fatalf("Pick and Done allocate %v times, want 0", n)
	}
}

// Two balancers (two channels) given one Counter in their resolver states
// share its limit, as gRFC A32's process-wide counter per cluster.
func TestSharedCounterLimitsTwoChannels(t *testing.T) {
	shared := NewCounter()
	var pickers []lb.Picker
	for range 2 {
		e := newEnv(t, 1)
		err := e.p.UpdateClientConnState(lb.ClientConnState{
			ResolverState:  resolver.State{Addresses: []resolver.Address{{Addr: "10.0.0.1:80"}}, Attributes: WithCounter(attributes.Attributes{}, shared)},
			BalancerConfig: e.p.ParseConfig(Name, `{"maxConcurrentRequests": 3, "childPolicy": [{"test_leaf": {}}]}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		e.p.CC.SubConns()[0].Ready()
		pickers = append(pickers, e.p.WantState(lb.Ready).Picker)
	}
	var dones []func(lb.DoneInfo)
	for _, i := range []int{0, 1, 0} {
		r, err := pickers[i].Pick(lb.PickInfo{})
		if err != nil {
			t.Fatalf("pick %d on channel %d: %v", len(dones)+1, i, err)
		}
		dones = append(dones, r.Done)
	}
	for i := range pickers {
		if _, err := pickers[i].Pick(lb.PickInfo{}); !errors.Is(err, ErrOverLimit) {
			t.Fatalf("channel %d with 3 in flight across both: %v, want over the limit", i, err)
		}
	}
	dones[0](lb.DoneInfo{})
	if _, err := pickers[1].Pick(lb.PickInfo{}); err != nil || shared.InFlight() != 3 {
		t.Fatalf("after a Done on channel 0, channel 1 picks: %v, %d in flight", err, shared.InFlight())
	}
}

// Balancers of two clusters given one Counters count each in its own
// cluster's Counter (gRFC A37: each cluster under an aggregate cluster
// has its own circuit breaker); a cluster Counters does not name falls
// back to the WithCounter one.
func TestCountersGiveEachClusterItsCounter(t *testing.T) {
	primary, secondary, fallback := NewCounter(), NewCounter(), NewCounter()
	attrs := WithCounters(WithCounter(attributes.Attributes{}, fallback), NewCounters(map[string]*Counter{"primary": primary, "secondary": secondary}))
	for _, tc := range []struct {
		cluster string
		want    *Counter
	}{{"primary", primary}, {"secondary", secondary}, {"other", fallback}} {
		e := newEnv(t, 1)
		err := e.p.UpdateClientConnState(lb.ClientConnState{
			ResolverState:  resolver.State{Addresses: []resolver.Address{{Addr: "10.0.0.1:80"}}, Attributes: attrs},
			BalancerConfig: e.p.ParseConfig(Name, `{"cluster": "`+tc.cluster+`", "maxConcurrentRequests": 3, "childPolicy": [{"test_leaf": {}}]}`),
		})
		if err != nil {
			t.Fatal(err)
		}
		e.p.CC.SubConns()[0].Ready()
		pk := e.p.WantState(lb.Ready).Picker
		if _, err := pk.Pick(lb.PickInfo{}); err != nil {
			t.Fatalf("cluster %s: %v", tc.cluster, err)
		}
		for _, c := range []*Counter{primary, secondary, fallback} {
			want := int64(0)
			if c == tc.want {
				want = 1
			}
			if c.InFlight() != want {
				t.Errorf("after a pick of cluster %s: a counter has %d in flight, want %d", tc.cluster, c.InFlight(), want)
			}
		}
		tc.want.n.Add(-1)
	}
}
