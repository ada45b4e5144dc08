package priority

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// testRegistry holds the test children and priority itself, for tests that
// parse configs without an env.
var testRegistry = lbtest.NewRegistry(NewBuilder())

func mustParse(tb lbtest.TB, js string) *Config {
	tb.Helper()
	return lbtest.ParseConfig(tb, testRegistry, Name, js).(*Config)
}

// env is one priority balancer on an lbtest.Parent, over the test
// children of its own registry.
type env struct {
	t lbtest.TB
	h *lbtest.Parent
}

func newEnv(t lbtest.TB, opts ...Option) *env {
	t.Helper()
	return newEnvWith(t, nil, opts...)
}

// newEnvWith is newEnv on a harness made with hopts.
func newEnvWith(t lbtest.TB, hopts []lbtest.Option, opts ...Option) *env {
	t.Helper()
	p := lbtest.NewParent(t, hopts...)
	p.Build(NewBuilder(opts...))
	return &env{t: t, h: p}
}

func (e *env) b() *priorityBalancer { return e.h.Balancer.(*priorityBalancer) }

// config returns the config listing children in the given order as
// priorities, parsed against the env's registry.
func (e *env) config(children ...childSpec) *Config {
	e.t.Helper()
	return e.h.ParseConfig(Name, configJSON(children...)).(*Config)
}

// update sends children as the config (priorities in their order) with
// addrs, and fails the test on an error.
func (e *env) update(addrs []resolver.Address, children ...childSpec) {
	e.t.Helper()
	e.h.MustUpdate(e.config(children...), addrs...)
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

const (
	failover = DefaultFailoverTimeout
	retain   = DefaultDeactivationDelay
)
