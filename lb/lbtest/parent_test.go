package lbtest_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
)

// fatalTB is t, but its Fatalf records the message and stops the check
// there, as t.FailNow would, so a test can see what a helper reports.
type fatalTB struct {
	*testing.T
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(stopped{})
}

// fatal runs check and returns what it reported with f.Fatalf, or "".
func (f *fatalTB) fatal(check func()) (msg string) {
	f.msg = ""
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopped); !ok {
				panic(r)
			}
			msg = f.msg
		}
	}()
	check()
	return ""
}

func TestParentRegistryIsItsOwn(t *testing.T) {
	t.Parallel()
	p1, p2 := lbtest.NewParent(t), lbtest.NewParent(t)
	if p1.Registry() == p2.Registry() || p1.Registry() == lb.DefaultRegistry() {
		t.Fatal("parents share a registry")
	}
	for _, name := range []string{lbtest.LeafName, lbtest.ScriptName} {
		if p1.Registry().Get(name) == nil {
			t.Errorf("%s not in the parent's registry", name)
		}
		if lb.Get(name) != nil {
			t.Errorf("%s registered in lb.DefaultRegistry", name)
		}
	}
	p1.Build(priority.NewBuilder())
	if p1.Registry().Get(priority.Name) == nil || p2.Registry().Get(priority.Name) != nil {
		t.Fatal("Build did not register the parent in its own registry only")
	}
	reg := lbtest.NewRegistry()
	if p := lbtest.NewParent(t, lbtest.WithRegistry(reg)); p.Registry() != reg {
		t.Fatal("WithRegistry ignored")
	}
}

func TestParentDrivesScriptChildren(t *testing.T) {
	t.Parallel()
	tb := &fatalTB{T: t}
	p := lbtest.NewParent(tb)
	p.Build(priority.NewBuilder())
	cfg := p.ParseConfig(priority.Name, `{"children": {"p0": {"config": [{"test_script": {"id": "p0"}}]}}, "priorities": ["p0"]}`)
	key := attributes.NewKey[string]("lbtest_test.key")
	if err := p.UpdateClientConnState(lb.ClientConnState{
		ResolverState:  resolver.State{Attributes: attributes.With(attributes.Attributes{}, key, "kept")},
		BalancerConfig: cfg,
	}); err != nil {
		t.Fatal(err)
	}
	got := p.Script("p0").Updates()[0].ResolverState.Attributes
	if v, _ := attributes.Get(got, key); v != "kept" {
		t.Errorf("the test's own attribute did not reach the child: %v", got)
	}
	sp := p.Report("p0", lb.TransientFailure, "down")
	p.WantPicker(lb.TransientFailure, "down")
	if s := p.WantState(lb.TransientFailure); s.Picker != sp {
		t.Fatalf("published picker %v, want the script's %v", s.Picker, sp)
	}

	for _, tc := range []struct {
		check func()
		want  string
	}{
		{func() { p.WantState(lb.Ready) }, "lbtest: published TRANSIENT_FAILURE with picker down, want READY"},
		{func() { p.WantPicker(lb.TransientFailure, "up") }, "lbtest: published TRANSIENT_FAILURE with picker down, want TRANSIENT_FAILURE with up"},
		{func() { p.Script("p9") }, `lbtest: no script child "p9" was built`},
		{func() { p.ParseConfig(priority.Name, `{"priorities": ["x"]}`) }, `lbtest: parsing priority_experimental config {"priorities": ["x"]}: `},
	} {
		if got := tb.fatal(tc.check); !strings.HasPrefix(got, tc.want) {
			t.Errorf("reported %q, want %q", got, tc.want)
		}
	}
}

func TestPickerToken(t *testing.T) {
	t.Parallel()
	sc := &lbtest.SubConn{}
	for _, tc := range []struct {
		picker lb.Picker
		want   string
	}{
		{nil, "<nil>"},
		{lb.NewQueuePicker(), "<queue>"},
		{lb.NewErrPicker(errors.New("boom")), "<error: boom>"},
		{pickerFunc(func(lb.PickInfo) (lb.PickResult, error) { return lb.PickResult{SubConn: sc}, nil }), "<picks>"},
	} {
		if got := lbtest.PickerToken(tc.picker); got != tc.want {
			t.Errorf("PickerToken(%T) = %q, want %q", tc.picker, got, tc.want)
		}
	}
	p := lbtest.NewParent(t)
	p.Build(p.Registry().Get(lbtest.LeafName))
	if err := p.UpdateAddresses(nil, resolver.Address{Addr: "a:1"}); err != nil {
		t.Fatal(err)
	}
	p.SubConnFor("a:1").Ready()
	if got := lbtest.PickerToken(p.State().Picker); got != "<leaf>" {
		t.Errorf("PickerToken(the leaf's READY picker) = %q, want <leaf>", got)
	}
	a := lbtest.PathAddr("a:1", "p0", "l0")
	if path, ok := hierarchy.Get(a); a.Addr != "a:1" || !ok || !slices.Equal(path, []string{"p0", "l0"}) {
		t.Errorf("PathAddr = %v with path %v, want a:1 with [p0 l0]", a, path)
	}
}

type pickerFunc func(lb.PickInfo) (lb.PickResult, error)

func (f pickerFunc) Pick(i lb.PickInfo) (lb.PickResult, error) { return f(i) }
