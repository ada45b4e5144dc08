package weightedtarget

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// targetSpec describes one target of a test config.
type targetSpec struct {
	name   string
	weight uint32
	policy string // a loadBalancingConfig list, JSON
}

func leafTarget(name string, weight uint32) targetSpec {
	return targetSpec{name: name, weight: weight, policy: `[{"test_leaf": {}}]`}
}

func scriptTarget(name string, weight uint32) targetSpec {
	return targetSpec{name: name, weight: weight, policy: fmt.Sprintf(`[{"test_script": {"id": %q, "subConn": true}}]`, name)}
}

func inlineTarget(name string, weight uint32, s lb.ConnectivityState) targetSpec {
	return targetSpec{name: name, weight: weight,
		policy: fmt.Sprintf(`[{"test_script": {"id": %q, "subConn": true, "inline": %q}}]`, name, s)}
}

// configJSON returns the JSON config of targets.
func configJSON(targets ...targetSpec) string {
	var ts []string
	for _, t := range targets {
		ts = append(ts, fmt.Sprintf(`%q: {"weight": %d, "childPolicy": %s}`, t.name, t.weight, t.policy))
	}
	return fmt.Sprintf(`{"targets": {%s}}`, strings.Join(ts, ", "))
}

// testRegistry holds the test children and weighted_target itself, for tests that
// parse configs without an env.
var testRegistry = lbtest.NewRegistry(Builder{})

func mustParse(tb lbtest.TB, js string) *Config {
	tb.Helper()
	return lbtest.ParseConfig(tb, testRegistry, Name, js).(*Config)
}

// env is one weighted_target balancer on an lbtest.Parent, over the test
// children of its own registry.
type env struct {
	t lbtest.TB
	h *lbtest.Parent
}

func newEnv(t lbtest.TB, opts ...lbtest.Option) *env {
	t.Helper()
	p := lbtest.NewParent(t, opts...)
	p.Build(Builder{})
	return &env{t: t, h: p}
}

func (e *env) b() *wtBalancer { return e.h.Balancer.(*wtBalancer) }

// config returns the config of targets, parsed against the env's registry.
func (e *env) config(targets ...targetSpec) *Config {
	e.t.Helper()
	return e.h.ParseConfig(Name, configJSON(targets...)).(*Config)
}

// update sends targets as the config with addrs, and fails the test on an
// error.
func (e *env) update(addrs []resolver.Address, targets ...targetSpec) {
	e.t.Helper()
	e.h.MustUpdate(e.config(targets...), addrs...)
}

// published returns how many states were published so far.
func (e *env) published() int { return len(e.h.CC.States.All()) }

// names maps each script child's SubConn to its id.
func (e *env) names(ids ...string) map[lb.SubConn]string {
	out := make(map[lb.SubConn]string, len(ids))
	for _, id := range ids {
		out[e.h.Script(id).SubConn()] = id
	}
	return out
}

// pickSeq returns the ids of the script children n picks of p land on, in
// order, failing the test on a pick error.
func pickSeq(t lbtest.TB, p lb.Picker, names map[lb.SubConn]string, n int) []string {
	t.Helper()
	out := make([]string, n)
	info := lb.PickInfo{Ctx: context.Background()}
	for i := range out {
		r, err := p.Pick(info)
		if err != nil {
			t.Fatalf("pick %d: %v", i, err)
		}
		name, ok := names[r.SubConn]
		if !ok {
			t.Fatalf("pick %d returned unknown %v", i, r.SubConn)
		}
		out[i] = name
	}
	return out
}

// counts counts the ids in seq.
func counts(seq []string) map[string]int {
	out := make(map[string]int)
	for _, s := range seq {
		out[s]++
	}
	return out
}

// checkPeriods fails unless every run of period consecutive elements of seq
// holds each id exactly want[id] times.
func checkPeriods(t lbtest.TB, seq []string, period int, want map[string]int) {
	t.Helper()
	for start := 0; start+period <= len(seq); start++ {
		got := counts(seq[start : start+period])
		if !mapsEqual(got, want) {
			t.Fatalf("picks %d..%d: got %v, want %v (sequence starts %v)",
				start, start+period-1, got, want, seq[:min(len(seq), 3*period)])
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// pickErr returns the error of one pick of p.
func pickErr(p lb.Picker) error {
	_, err := p.Pick(lb.PickInfo{Ctx: context.Background()})
	return err
}

// childNames returns the existing targets' names.
func (e *env) childNames() []string {
	var out []string
	e.h.Do(func() {
		for _, c := range e.b().children.Children() {
			out = append(out, c.Name())
		}
	})
	return slices.Clip(out)
}
