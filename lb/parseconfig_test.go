package lb_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// fullLeaf is a ConfigParser: {"valid": bool}, listing what it does not
// know, written with ParseConfigWith.
type fullLeaf struct{}

func (fullLeaf) Name() string                                     { return "full_leaf" }
func (fullLeaf) Build(lb.ClientConn, lb.BuildOptions) lb.Balancer { return nil }
func (fullLeaf) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (*testLeafConfig, error) {
		cfg := &testLeafConfig{Valid: true}
		if err := obj.Decode(&cfg.Valid, "valid"); err != nil {
			return nil, err
		}
		if !cfg.Valid {
			return nil, lb.ConfigErrorf("valid", "must be true")
		}
		return cfg, nil
	})
}

// fullParent is a ConfigParser whose children are objects holding a policy
// list, read with ObjectAt and PolicyList, as priority's are.
type fullParent struct{ reg *lb.Registry }

func (fullParent) Name() string                                     { return "full_parent" }
func (fullParent) Build(lb.ClientConn, lb.BuildOptions) lb.Balancer { return nil }
func (b fullParent) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) ([]string, error) {
		var children map[string]json.RawMessage
		if err := obj.Decode(&children, "children"); err != nil {
			return nil, err
		}
		var names []string
		for _, name := range []string{"a", "b"} { // a fixed order
			raw, ok := children[name]
			if !ok {
				continue
			}
			at := lb.JoinPath("children", lb.KeyPath(name))
			child, err := obj.ObjectAt(at, raw)
			if err != nil {
				return nil, err
			}
			p, err := child.PolicyList(b.reg, "policy", "child_policy")
			if err != nil {
				return nil, lb.PrefixConfigError(at, err)
			}
			names = append(names, p.Name)
		}
		return names, nil
	})
}

// The one way lbkit parses a policy's config: a ConfigParser lists its
// unknown fields; a user's builder with only the older ParseConfig(raw)
// (Config, error) is adapted and lists none; a builder with no parser
// takes no config and every key is unknown.
func TestParseConfigOfEveryKindOfBuilder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		b           lb.Builder
		raw         string
		wantCfg     lb.Config
		wantUnknown []string
		wantErr     string
	}{
		{"config parser", fullLeaf{}, `{"valid":true,"x":1,"y":null}`, &testLeafConfig{Valid: true}, []string{"x", "y"}, ""},
		{"config parser, defaults", fullLeaf{}, ``, &testLeafConfig{Valid: true}, nil, ""},
		{"config parser, error", fullLeaf{}, `{"valid":false,"x":1}`, nil, nil, "valid: must be true"},
		{"config parser, not an object", fullLeaf{}, `[]`, nil, nil, "want a JSON object, got an array"},
		{"simple parser", testLeaf{name: "simple"}, `{"valid":true,"x":1}`, testLeafConfig{Valid: true}, nil, ""},
		{"simple parser, error", testLeaf{name: "simple"}, `{"valid":"no"}`, nil, nil, "valid: want bool, got string"},
		{"no parser", testNoConfig{}, `{"x":1,"y":2}`, nil, []string{"x", "y"}, ""},
		{"no parser, not an object", testNoConfig{}, `7`, nil, nil, ""},
	} {
		cfg, unknown, err := lb.ParseConfig(tc.b, json.RawMessage(tc.raw))
		if tc.wantErr != "" {
			var ce *lb.ConfigError
			if !errors.As(err, &ce) || err.Error() != tc.wantErr || cfg != nil || unknown != nil {
				t.Errorf("%s: ParseConfig = %#v, %q, %v; want nil, nil, *lb.ConfigError %q", tc.name, cfg, unknown, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(cfg, tc.wantCfg) || !reflect.DeepEqual(unknown, tc.wantUnknown) {
			t.Errorf("%s: ParseConfig = %#v, %q, %v; want %#v, %q, nil", tc.name, cfg, unknown, err, tc.wantCfg, tc.wantUnknown)
		}
	}
}

// A user's policy with only the simple ParseConfig works in a policy list,
// under a parent that lists unknown fields: its config is parsed, its
// errors carry the full path, and its own unknown fields cannot be listed.
func TestSimpleParserInPolicyLists(t *testing.T) {
	reg := lb.NewRegistry(testLeaf{name: "simple"}, fullLeaf{})
	reg.Register(fullParent{reg: reg})
	p, err := reg.ParseLoadBalancingConfig(json.RawMessage(`[{"full_parent":{"children":{
		"a":{"policy":[{"simple":{"valid":true,"typo":1}}],"extra":1},
		"b":{"child_policy":[{"full_leaf":{"valid":true,"typo":2}}]}},"z":0}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if names := p.Config.([]string); strings.Join(names, " ") != "simple full_leaf" {
		t.Errorf("children's policies %q", names)
	}
	want := []string{
		"loadBalancingConfig[0].full_parent.z",
		`loadBalancingConfig[0].full_parent.children["a"].extra`,
		`loadBalancingConfig[0].full_parent.children["b"].child_policy[0].full_leaf.typo`,
	}
	if !reflect.DeepEqual(p.Unknown, want) {
		t.Errorf("unknown %q, want %q", p.Unknown, want)
	}
	for _, tc := range []struct{ in, want string }{
		{`[{"full_parent":{"children":{"a":{"policy":[{"simple":{"valid":false}}]}}}}]`,
			`loadBalancingConfig[0].full_parent.children["a"].policy[0].simple.valid: must be true`},
		{`[{"full_parent":{"children":{"a":{}}}}]`,
			`loadBalancingConfig[0].full_parent.children["a"].policy: empty policy list`},
		{`[{"full_parent":{"children":{"b":3}}}]`,
			`loadBalancingConfig[0].full_parent.children["b"]: want a JSON object, got a number`},
	} {
		if _, err := reg.ParseLoadBalancingConfig(json.RawMessage(tc.in)); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %s", tc.in, err, tc.want)
		}
	}
}

// ConfigObject.Unknown counts a field read under any of its names, and
// reads the unknown fields of a nested object when asked, not when the
// object was found.
func TestConfigObjectUnknown(t *testing.T) {
	obj, err := lb.ParseConfigObject(json.RawMessage(`{"a":1,"b_twin":2,"sub":{"x":1,"y":2},"c":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := obj.Decode(&n, "a"); err != nil {
		t.Fatal(err)
	}
	obj.Raw("b", "b_twin")
	raw, _, _ := obj.Raw("sub")
	sub, err := obj.ObjectAt("sub", raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(obj.Unknown(), " "); got != "c sub.x sub.y" {
		t.Errorf("before the sub-object is read: %q", got)
	}
	sub.Raw("x")
	if got := strings.Join(obj.Unknown(), " "); got != "c sub.y" {
		t.Errorf("after: %q", got)
	}
	if got := (lb.ConfigObject{}).Unknown(); got != nil {
		t.Errorf("zero ConfigObject: %q", got)
	}
}
