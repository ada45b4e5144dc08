package priority

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
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

// child describes one child of a test config.
type childSpec struct {
	name   string
	policy string // a loadBalancingConfig list, JSON
	ignore bool
}

func leafChild(name string) childSpec {
	return childSpec{name: name, policy: `[{"test_leaf": {}}]`}
}

func scriptChild(name string) childSpec {
	return childSpec{name: name, policy: fmt.Sprintf(`[{"test_script": {"id": %q}}]`, name)}
}

func inlineChild(name string, s lb.ConnectivityState) childSpec {
	return childSpec{name: name, policy: fmt.Sprintf(`[{"test_script": {"id": %q, "inline": %q}}]`, name, s)}
}

// configJSON returns the JSON config listing children in the given order
// as priorities.
func configJSON(children ...childSpec) string {
	var cs, ps []string
	for _, c := range children {
		cs = append(cs, fmt.Sprintf(`%q: {"config": %s, "ignoreReresolutionRequests": %v}`, c.name, c.policy, c.ignore))
		ps = append(ps, fmt.Sprintf("%q", c.name))
	}
	return fmt.Sprintf(`{"children": {%s}, "priorities": [%s]}`, strings.Join(cs, ", "), strings.Join(ps, ", "))
}

func mustParse(tb lbtest.TB, js string) *Config {
	tb.Helper()
	cfg, err := parseConfig(json.RawMessage(js), lb.DefaultRegistry())
	if err != nil {
		tb.Fatalf("parsing %s: %v", js, err)
	}
	return cfg
}

// paddr returns addr with path [child, rest...].
func paddr(addr string, path ...string) resolver.Address {
	return hierarchy.Set(resolver.Address{Addr: addr}, path)
}

// env is one priority balancer on the lbtest harness.
type env struct {
	t  lbtest.TB
	h  *lbtest.Harness
	tr *lbtest.Scripts
}

func newEnv(t lbtest.TB, opts ...Option) *env {
	t.Helper()
	return newEnvHarness(t, lbtest.New(t), opts...)
}

func newEnvHarness(t lbtest.TB, h *lbtest.Harness, opts ...Option) *env {
	t.Helper()
	h.Build(NewBuilder(opts...))
	return &env{t: t, h: h, tr: lbtest.NewScripts()}
}

func (e *env) b() *priorityBalancer { return e.h.Balancer.(*priorityBalancer) }

// update sends children as the config (priorities in their order) with
// addrs, and fails the test on an error.
func (e *env) update(addrs []resolver.Address, children ...childSpec) {
	e.t.Helper()
	if err := e.updateErr(mustParse(e.t, configJSON(children...)), addrs); err != nil {
		e.t.Fatalf("UpdateClientConnState: %v", err)
	}
}

func (e *env) updateErr(cfg *Config, addrs []resolver.Address) error {
	e.t.Helper()
	return e.h.UpdateClientConnState(lb.ClientConnState{
		ResolverState: resolver.State{
			Addresses:  addrs,
			Attributes: e.tr.Attributes(attributes.Attributes{}),
		},
		BalancerConfig: cfg,
	})
}

// report makes the script child id publish state with a picker named
// token, and returns that picker.
func (e *env) report(id string, state lb.ConnectivityState, token string) *lbtest.ScriptPicker {
	e.t.Helper()
	s := e.tr.Get(id)
	if s == nil {
		e.t.Fatalf("no script child %q", id)
	}
	var p *lbtest.ScriptPicker
	e.h.Do(func() { p = s.Report(state, token) })
	return p
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

// wantState checks the last published state and, for a script picker, its
// token.
func (e *env) wantState(state lb.ConnectivityState, token string) {
	e.t.Helper()
	s := e.last()
	got := pickerToken(s.Picker)
	if s.ConnectivityState != state || got != token {
		e.t.Fatalf("published %v with picker %s, want %v with %s", s.ConnectivityState, got, state, token)
	}
}

// pickerToken names a picker for comparisons: a script picker's token,
// "<queue>" for a queueing picker, "<error: msg>" for a failing one,
// "<leaf>" for a leaf's READY picker.
func pickerToken(p lb.Picker) string {
	switch p := p.(type) {
	case *lbtest.ScriptPicker:
		return p.Token
	case nil:
		return "<nil>"
	}
	_, err := p.Pick(lb.PickInfo{Ctx: context.Background()})
	switch {
	case err == lb.ErrNoSubConnAvailable:
		return "<queue>"
	case err != nil:
		return "<error: " + err.Error() + ">"
	}
	return "<leaf>" // the only pickers here that return a SubConn

}

// pick returns the SubConn p picks, failing the test on an error.
func pick(t testing.TB, p lb.Picker) lb.SubConn {
	t.Helper()
	r, err := p.Pick(lb.PickInfo{Ctx: context.Background()})
	if err != nil {
		t.Fatalf("Pick: %v", err)
	}
	return r.SubConn
}

// child returns the existing child called name, or nil, read inside the
// serializer.
func (e *env) child(name string) *child {
	var c *child
	e.h.Do(func() { c = e.b().children.Get(name) })
	return c
}

// childNames returns the existing children's names and whether each is
// active, as "name" or "name(inactive)".
func (e *env) childNames() []string {
	var out []string
	e.h.Do(func() {
		for _, c := range e.b().children.Children() {
			n := c.Name()
			if !c.Active() {
				n += "(inactive)"
			}
			out = append(out, n)
		}
	})
	return out
}

// failoverPending reports whether the child called name has a pending
// failover timer.
func (e *env) failoverPending(name string) bool {
	var ok bool
	e.h.Do(func() {
		if c := e.b().children.Get(name); c != nil {
			ok = c.Data.failover != nil
		}
	})
	return ok
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

const (
	failover = DefaultFailoverTimeout
	retain   = DefaultDeactivationDelay
)

// scriptName is the script child policy (lbtest.NewScriptBuilder): the
// test sets its state directly.
const scriptName = "test_script"

// leafName is the test leaf policy (lbtest.NewLeafBuilder): one SubConn per
// address, connected at once, round robin over the READY ones.
const leafName = "test_leaf"
