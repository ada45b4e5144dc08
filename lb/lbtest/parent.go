package lbtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
)

// The names under which [NewRegistry] registers the test children.
const (
	// LeafName is the leaf of [NewLeafBuilder]: one SubConn per address,
	// round robin over the READY ones.
	LeafName = "test_leaf"
	// ScriptName is the script child of [NewScriptBuilder]: the test sets
	// its state.
	ScriptName = "test_script"
)

// NewRegistry returns a new [lb.Registry] holding the test leaf under
// [LeafName], the script child under [ScriptName], and builders. Tests that
// look their policies up in a registry of their own share nothing through
// [lb.DefaultRegistry] and may call t.Parallel.
func NewRegistry(builders ...lb.Builder) *lb.Registry {
	return lb.NewRegistry(append([]lb.Builder{NewLeafBuilder(LeafName), NewScriptBuilder(ScriptName)}, builders...)...)
}

// Parent runs a parent policy under test (priority, weighted_target,
// outlier_detection, your own) on a [Harness] whose children are test
// policies, looked up in a registry of the test's own:
//
//   - [Parent.Registry] is a new registry ([NewRegistry]) holding
//     [LeafName] and [ScriptName]; [Parent.Build] registers the parent
//     there too, so that [Parent.ParseConfig] parses its config, children
//     included, without touching [lb.DefaultRegistry]; a parent's builder
//     ([lb.ParentBuilder]) parses its children's policies against the
//     registry it is registered in. Nothing is shared with other tests: a
//     test using a Parent may call t.Parallel.
//   - [Parent.UpdateClientConnState] and [Parent.UpdateAddresses] put
//     [Parent.Scripts] in the resolver state's attributes, so each script
//     child the parent builds registers there under the id of its config;
//     [Parent.Script] and [Parent.Report] find it and drive it.
//   - [Parent.WantState] and [Parent.WantPicker] check what the parent
//     published last; [PickerToken] names a picker for such comparisons.
//
// Everything else is the embedded [Harness]'s: its clock, serializer, fake
// ClientConn and waits. Like the Harness, a Parent's methods must be called
// from the test's goroutine; its Scripts may be read from any goroutine.
type Parent struct {
	*Harness
	// Scripts records the script children the parent builds.
	Scripts *Scripts
}

// NewParent returns a Parent on a new [Harness] made with options. Its
// registry is [NewRegistry]() unless options include [WithRegistry].
func NewParent(tb TB, options ...Option) *Parent {
	tb.Helper()
	h := New(tb, append([]Option{WithRegistry(NewRegistry())}, options...)...)
	return &Parent{Harness: h, Scripts: NewScripts()}
}

// Build registers b in the registry, replacing any builder of its name,
// then builds the balancer under test from it as [Harness.Build] does.
func (p *Parent) Build(b lb.Builder) lb.Balancer {
	p.tb.Helper()
	p.registry.Register(b)
	return p.Harness.Build(b)
}

// ParseConfig parses configJSON as the config of the policy registered as
// name, through the registry ([lb.Registry.ParsePolicyList] of
// [{name: configJSON}]), and fails the test on an error.
func (p *Parent) ParseConfig(name, configJSON string) lb.Config {
	p.tb.Helper()
	return ParseConfig(p.tb, p.registry, name, configJSON)
}

// ParseConfig parses configJSON as the config of the policy registered in
// reg as name ([lb.Registry.ParsePolicyList] of [{name: configJSON}]),
// and fails tb on an error. With reg from [NewRegistry] a parent policy's
// config may name the test children.
func ParseConfig(tb TB, reg *lb.Registry, name, configJSON string) lb.Config {
	tb.Helper()
	key, err := json.Marshal(name)
	if err != nil {
		tb.Fatalf("lbtest: policy name %q: %v", name, err)
	}
	pp, err := reg.ParsePolicyList(json.RawMessage(fmt.Sprintf(`[{%s: %s}]`, key, configJSON)))
	if err != nil {
		tb.Fatalf("lbtest: parsing %s config %s: %v", name, configJSON, err)
	}
	return pp.Config
}

// UpdateClientConnState adds [Parent.Scripts] to s's resolver attributes,
// calls the balancer's UpdateClientConnState and returns its error.
func (p *Parent) UpdateClientConnState(s lb.ClientConnState) error {
	p.tb.Helper()
	s.ResolverState.Attributes = p.Scripts.Attributes(s.ResolverState.Attributes)
	return p.Harness.UpdateClientConnState(s)
}

// UpdateAddresses calls [Parent.UpdateClientConnState] with addrs and cfg,
// and returns its error.
func (p *Parent) UpdateAddresses(cfg lb.Config, addrs ...resolver.Address) error {
	p.tb.Helper()
	return p.UpdateClientConnState(lb.ClientConnState{
		ResolverState:  resolver.State{Addresses: addrs},
		BalancerConfig: cfg,
	})
}

// MustUpdate calls [Parent.UpdateAddresses] with cfg and addrs, and fails
// the test on an error.
func (p *Parent) MustUpdate(cfg lb.Config, addrs ...resolver.Address) {
	p.tb.Helper()
	if err := p.UpdateAddresses(cfg, addrs...); err != nil {
		p.tb.Fatalf("UpdateClientConnState: %v", err)
	}
}

// Script returns the newest script child whose config has id, failing the
// test if the parent built none.
func (p *Parent) Script(id string) *Script {
	p.tb.Helper()
	s := p.Scripts.Get(id)
	if s == nil {
		p.tb.Fatalf("lbtest: no script child %q was built", id)
	}
	return s
}

// Report makes the script child id publish state with a new picker called
// token ([Script.Report], inside the serializer), waits for the parent's
// reaction and returns the picker.
func (p *Parent) Report(id string, state lb.ConnectivityState, token string) *ScriptPicker {
	p.tb.Helper()
	s := p.Script(id)
	var sp *ScriptPicker
	p.Do(func() { sp = s.Report(state, token) })
	return sp
}

// WantState fails the test unless the parent's last published state is
// state, and returns what it published.
func (p *Parent) WantState(state lb.ConnectivityState) lb.State {
	p.tb.Helper()
	s := p.State()
	if s.ConnectivityState != state {
		p.tb.Fatalf("lbtest: published %v with picker %s, want %v", s.ConnectivityState, PickerToken(s.Picker), state)
	}
	return s
}

// WantPicker fails the test unless the parent's last published state is
// state with a picker that [PickerToken] names token, such as a script
// child's picker's token or "<queue>".
func (p *Parent) WantPicker(state lb.ConnectivityState, token string) {
	p.tb.Helper()
	s := p.State()
	if got := PickerToken(s.Picker); s.ConnectivityState != state || got != token {
		p.tb.Fatalf("lbtest: published %v with picker %s, want %v with %s", s.ConnectivityState, got, state, token)
	}
}

// PickerToken names a picker for comparisons:
//
//   - a [ScriptPicker]: its Token;
//   - nil: "<nil>";
//   - a picker of [NewLeafBuilder]'s leaf: "<leaf>";
//   - a picker that queues ([lb.ErrNoSubConnAvailable]): "<queue>";
//   - a picker that fails: "<error: " + the error + ">";
//   - any other picker: "<picks>".
//
// It picks at most once, with a background context, and does not call the
// pick's Done.
func PickerToken(p lb.Picker) string {
	switch p := p.(type) {
	case *ScriptPicker:
		return p.Token
	case *leafPicker:
		return "<leaf>"
	case nil:
		return "<nil>"
	}
	_, err := p.Pick(lb.PickInfo{Ctx: context.Background()})
	switch {
	case errors.Is(err, lb.ErrNoSubConnAvailable):
		return "<queue>"
	case err != nil:
		return "<error: " + err.Error() + ">"
	}
	return "<picks>"
}

// PathAddr returns an address for addr with the hierarchy path path
// ([hierarchy.Set]): the first element names the parent's child that gets
// it, and the child gets the address with the rest of the path.
func PathAddr(addr string, path ...string) resolver.Address {
	return hierarchy.Set(resolver.Address{Addr: addr}, path)
}
