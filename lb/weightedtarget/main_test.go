package weightedtarget

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestMain(m *testing.M) {
	lb.Register(lbtest.NewLeafBuilder(leafName))
	lb.Register(lbtest.NewScriptBuilder(scriptName))
	goleak.VerifyTestMain(m)
}

// targetSpec describes one target of a test config.
type targetSpec struct {
	name   string
	weight uint32
	policy string // a loadBalancingConfig list, JSON
}

func leafTarget(name string, weight uint32) targetSpec {
	return targetSpec{name: name, weight: weight, policy: `[{"test_rr": {}}]`}
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

func mustParse(tb lbtest.TB, js string) *Config {
	tb.Helper()
	cfg, err := parseConfig(json.RawMessage(js), lb.DefaultRegistry())
	if err != nil {
		tb.Fatalf("parsing %s: %v", js, err)
	}
	return cfg
}

// paddr returns addr with the hierarchical path path.
func paddr(addr string, path ...string) resolver.Address {
	return hierarchy.Set(resolver.Address{Addr: addr}, path)
}

// env is one weighted_target balancer on the lbtest harness.
type env struct {
	t  lbtest.TB
	h  *lbtest.Harness
	tr *lbtest.Scripts
}

func newEnv(t lbtest.TB, opts ...lbtest.Option) *env {
	t.Helper()
	h := lbtest.New(t, opts...)
	h.Build(Builder{})
	return &env{t: t, h: h, tr: lbtest.NewScripts()}
}

func (e *env) b() *wtBalancer { return e.h.Balancer.(*wtBalancer) }

// update sends targets as the config with addrs, and fails the test on an
// error.
func (e *env) update(addrs []resolver.Address, targets ...targetSpec) {
	e.t.Helper()
	if err := e.updateErr(mustParse(e.t, configJSON(targets...)), addrs); err != nil {
		e.t.Fatalf("UpdateClientConnState: %v", err)
	}
}

func (e *env) updateErr(cfg lb.Config, addrs []resolver.Address) error {
	e.t.Helper()
	return e.h.UpdateClientConnState(lb.ClientConnState{
		ResolverState: resolver.State{
			Addresses:  addrs,
			Attributes: e.tr.Attributes(attributes.Attributes{}),
		},
		BalancerConfig: cfg,
	})
}

// script returns the newest script child with id.
func (e *env) script(id string) *lbtest.Script {
	e.t.Helper()
	s := e.tr.Get(id)
	if s == nil {
		e.t.Fatalf("no script child %q", id)
	}
	return s
}

// report makes the script child id publish state with a picker named
// token.
func (e *env) report(id string, state lb.ConnectivityState, token string) {
	e.t.Helper()
	s := e.script(id)
	e.h.Do(func() { s.Report(state, token) })
}

// last returns the last published state.
func (e *env) last() lb.State {
	e.t.Helper()
	s, ok := e.h.CC.LastState()
	if !ok {
		e.t.Fatalf("no state published")
	}
	return s
}

// published returns how many states were published so far.
func (e *env) published() int { return len(e.h.CC.States.All()) }

// wantState checks the last published state.
func (e *env) wantState(want lb.ConnectivityState) lb.State {
	e.t.Helper()
	s := e.last()
	if s.ConnectivityState != want {
		e.t.Fatalf("published %v, want %v", s.ConnectivityState, want)
	}
	return s
}

// names maps each script child's SubConn to its id.
func (e *env) names(ids ...string) map[lb.SubConn]string {
	out := make(map[lb.SubConn]string, len(ids))
	for _, id := range ids {
		out[e.script(id).SubConn()] = id
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

// logBuffer is a concurrency-safe buffer for a test logger.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger(b *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// scriptName is the script child policy (lbtest.NewScriptBuilder): the
// test sets its state directly.
const scriptName = "test_script"

// leafName is the test leaf policy (lbtest.NewLeafBuilder): one SubConn per
// address, connected at once, round robin over the READY ones.
const leafName = "test_rr"
