package lb_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
)

// testParent is a registered test policy whose config nests a child policy
// list, like priority's children, to pin nested error paths. It parses the
// list with its registry.
type testParent struct{ reg *lb.Registry }

type testParentConfig struct{ child *lb.ParsedPolicy }

func (testParent) Name() string                                     { return "test_parent" }
func (testParent) Build(lb.ClientConn, lb.BuildOptions) lb.Balancer { return nil }
func (b testParent) ParseConfig(raw json.RawMessage) (lb.Config, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return nil, err
	}
	var children map[string]struct {
		Config json.RawMessage `json:"config"`
	}
	if err := obj.Decode(&children, "children"); err != nil {
		return nil, err
	}
	cfg := &testParentConfig{}
	for name, c := range children {
		p, err := b.reg.ParsePolicyList(c.Config)
		if err != nil {
			return nil, lb.PrefixConfigError("children"+lb.KeyPath(name)+".config", err)
		}
		cfg.child = p
	}
	return cfg, nil
}

// testLeaf accepts {"valid": bool}: false (or a wrong type) is an error.
type testLeaf struct{ name string }

type testLeafConfig struct{ Valid bool }

func (b testLeaf) Name() string                                   { return b.name }
func (testLeaf) Build(lb.ClientConn, lb.BuildOptions) lb.Balancer { return nil }
func (testLeaf) ParseConfig(raw json.RawMessage) (lb.Config, error) {
	obj, err := lb.ParseConfigObject(raw)
	if err != nil {
		return nil, err
	}
	cfg := testLeafConfig{Valid: true}
	if err := obj.Decode(&cfg.Valid, "valid"); err != nil {
		return nil, err
	}
	if !cfg.Valid {
		return nil, lb.ConfigErrorf("valid", "must be true")
	}
	return cfg, nil
}

// testNoConfig has no ConfigParser.
type testNoConfig struct{}

func (testNoConfig) Name() string                                     { return "test_no_config" }
func (testNoConfig) Build(lb.ClientConn, lb.BuildOptions) lb.Balancer { return nil }

// testRegistry holds the test policies, apart from the default registry,
// so that the names it lists are these alone.
var testRegistry = func() *lb.Registry {
	r := lb.NewRegistry(testLeaf{name: "test_leaf_a"}, testLeaf{name: "test_leaf_b"}, testNoConfig{})
	r.Register(testParent{reg: r})
	return r
}()

func TestParseLoadBalancingConfig(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // policy name, or "error: <message>"
	}{
		{"first registered wins", `[{"unknown":{}},{"test_leaf_b":{}},{"test_leaf_a":{}}]`, "test_leaf_b"},
		{"unknown fields ignored", `[{"test_leaf_a":{"valid":true,"extra":[1,2]}}]`, "test_leaf_a"},
		{"null config", `[{"test_leaf_a":null}]`, "test_leaf_a"},
		{"no config parser", `[{"test_no_config":{"anything":1}}]`, "test_no_config"},
		{"entries after the winner are not examined", `[{"test_leaf_a":{}},{"a":1,"b":2},7]`, "test_leaf_a"},
		{"invalid winner: no fallback", `[{"test_leaf_a":{"valid":false}},{"test_leaf_b":{}}]`,
			"error: loadBalancingConfig[0].test_leaf_a.valid: must be true"},
		{"wrong field type", `[{"test_leaf_a":{"valid":"yes"}}]`,
			"error: loadBalancingConfig[0].test_leaf_a.valid: want bool, got string"},
		{"config not an object", `[{"test_leaf_a":[]}]`,
			"error: loadBalancingConfig[0].test_leaf_a: want a JSON object, got an array"},
		{"empty list", `[]`, "error: loadBalancingConfig: empty policy list"},
		{"null list", `null`, "error: loadBalancingConfig: empty policy list"},
		{"not a list", `{"test_leaf_a":{}}`, "error: loadBalancingConfig: want a JSON array of policies, got an object"},
		{"invalid JSON", `[{"test_leaf_a":`, "error: loadBalancingConfig: invalid JSON at byte 16: unexpected end of input"},
		{"no registered policy", `[{"x":{}},{"y":{}}]`,
			`error: loadBalancingConfig: no registered policy in list (unregistered: "x", "y"; registered: test_leaf_a, test_leaf_b, test_no_config, test_parent)`},
		{"two keys before the winner", `[{"x":{},"y":{}},{"test_leaf_a":{}}]`,
			"error: loadBalancingConfig[0]: want exactly one policy name in an entry, got 2 keys"},
		{"zero keys", `[{}]`, "error: loadBalancingConfig[0]: want exactly one policy name in an entry, got 0 keys"},
		{"entry not an object", `["pick"]`, "error: loadBalancingConfig[0]: want an object with one policy name, got a string"},
		{"nested empty list", `[{"test_parent":{"children":{"p1":{"config":[]}}}}]`,
			`error: loadBalancingConfig[0].test_parent.children["p1"].config: empty policy list`},
		{"nested invalid leaf", `[{"test_parent":{"children":{"p1":{"config":[{"test_leaf_a":{"valid":false}}]}}}}]`,
			`error: loadBalancingConfig[0].test_parent.children["p1"].config[0].test_leaf_a.valid: must be true`},
		{"nested valid", `[{"test_parent":{"children":{"p1":{"config":[{"zzz":{}},{"test_leaf_a":{}}]}}}}]`, "test_parent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := testRegistry.ParseLoadBalancingConfig(json.RawMessage(tc.in))
			if msg, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
				if err == nil {
					t.Fatalf("parse(%s) = %s, want error %q", tc.in, p.Name, msg)
				}
				if err.Error() != msg {
					t.Fatalf("parse(%s) error = %q, want %q", tc.in, err, msg)
				}
				var ce *lb.ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("error %T is not a *lb.ConfigError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse(%s) error = %v, want %s", tc.in, err, tc.want)
			}
			if p.Name != tc.want || p.Builder == nil {
				t.Fatalf("parse(%s) = %s, want %s", tc.in, p.Name, tc.want)
			}
		})
	}
}

// listEntry is a generated loadBalancingConfig entry for the model test.
type listEntry struct {
	kind string // "leaf_a", "leaf_b", "unknown", "invalid_a", "multi", "empty_obj", "non_object"
}

func (e listEntry) json() string {
	switch e.kind {
	case "leaf_a":
		return `{"test_leaf_a":{}}`
	case "leaf_b":
		return `{"test_leaf_b":{"valid":true}}`
	case "invalid_a":
		return `{"test_leaf_a":{"valid":false}}`
	case "unknown":
		return `{"not_registered":{}}`
	case "multi":
		return `{"test_leaf_a":{},"test_leaf_b":{}}`
	case "empty_obj":
		return `{}`
	default:
		return `42`
	}
}

// modelParse applies the rules of lb.ParsePolicyList written as plainly as
// possible: the first registered entry wins; an invalid winner, an entry
// with other than one key or a non-object before the winner, an empty
// list, or no registered entry is an error.
func modelParse(entries []listEntry) (name string, errIndex int, ok bool) {
	if len(entries) == 0 {
		return "", -1, false
	}
	for i, e := range entries {
		switch e.kind {
		case "leaf_a":
			return "test_leaf_a", 0, true
		case "leaf_b":
			return "test_leaf_b", 0, true
		case "invalid_a", "multi", "empty_obj", "non_object":
			return "", i, false
		}
	}
	return "", -1, false
}

// Property: the parser agrees with the model on which policy wins, and on
// which entry an error points at.
func TestPropertyPolicyListMatchesModel(t *testing.T) {
	kinds := []string{"empty_obj", "invalid_a", "leaf_a", "leaf_b", "multi", "non_object", "unknown"}
	rapid.Check(t, func(t *rapid.T) {
		entries := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) listEntry {
			return listEntry{kind: rapid.SampledFrom(kinds).Draw(t, "kind")}
		}), 0, 6).Draw(t, "entries")
		parts := make([]string, len(entries))
		for i, e := range entries {
			parts[i] = e.json()
		}
		raw := "[" + strings.Join(parts, ",") + "]"
		p, err := testRegistry.ParsePolicyList(json.RawMessage(raw))
		name, errIndex, ok := modelParse(entries)
		if ok {
			if err != nil || p.Name != name {
				t.Fatalf("parse(%s) = %v, %v; model wants %s", raw, p, err, name)
			}
			return
		}
		var ce *lb.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("parse(%s) = %v, %v; model wants a *ConfigError", raw, p, err)
		}
		wantPath := ""
		if errIndex >= 0 {
			wantPath = fmt.Sprintf("[%d]", errIndex)
		}
		if !strings.HasPrefix(ce.Path, wantPath) || (wantPath == "" && ce.Path != "") {
			t.Fatalf("parse(%s) error path %q, model wants %q (%v)", raw, ce.Path, wantPath, err)
		}
	})
}

func TestConfigObjectDecode(t *testing.T) {
	obj, err := lb.ParseConfigObject(json.RawMessage(`{"ignoreReresolutionRequests":true,"n":-1,"Case":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var b bool
	if err := obj.Decode(&b, "ignoreReresolutionRequests", "ignore_reresolution_requests"); err != nil || !b {
		t.Errorf("Decode camelCase = %v, %v", b, err)
	}
	var u uint32
	if err := obj.Decode(&u, "n"); err == nil || err.Error() != "n: want uint32, got number -1" {
		t.Errorf("Decode(-1 into uint32) error = %v", err)
	}
	var c int
	if err := obj.Decode(&c, "case"); err != nil || c != 0 {
		t.Errorf("field names must be case-sensitive: got %d, %v", c, err)
	}
	if _, err := lb.ParseConfigObject(json.RawMessage(`"x"`)); err == nil {
		t.Errorf("ParseConfigObject(string) succeeded")
	}
}

func TestPrefixConfigError(t *testing.T) {
	inner := lb.ConfigErrorf(`[0].x`, "bad")
	if got := lb.PrefixConfigError("children", inner).Error(); got != "children[0].x: bad" {
		t.Errorf("got %q", got)
	}
	if got := lb.PrefixConfigError("a", lb.ConfigErrorf("b", "bad")).Error(); got != "a.b: bad" {
		t.Errorf("got %q", got)
	}
	if got := lb.PrefixConfigError("a", errors.New("plain")).Error(); got != "a: plain" {
		t.Errorf("got %q", got)
	}
	if lb.PrefixConfigError("a", nil) != nil {
		t.Errorf("nil error not kept nil")
	}
}

// FuzzParseLoadBalancingConfig: no input panics; every error is a
// *ConfigError whose path starts at loadBalancingConfig.
func FuzzParseLoadBalancingConfig(f *testing.F) {
	for _, s := range []string{
		`[{"test_leaf_a":{}}]`, `[]`, `null`, `[{"x":{}},{"test_parent":{"children":{"p":{"config":[{"test_leaf_b":{}}]}}}}]`,
		`[{"test_leaf_a":{"valid":false}}]`, `[{"a":1,"b":2}]`, `{`, `[1,2,3]`, `[{"test_no_config":null}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := testRegistry.ParseLoadBalancingConfig(json.RawMessage(in))
		if err != nil {
			var ce *lb.ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(ce.Path, "loadBalancingConfig") {
				t.Fatalf("error %v (%T) is not a *ConfigError rooted at loadBalancingConfig", err, err)
			}
			return
		}
		if p == nil || p.Builder == nil || testRegistry.Get(p.Name) == nil {
			t.Fatalf("success without a registered builder: %+v", p)
		}
	})
}

func TestParseUint32(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lowest uint32
		want   uint32
		err    string
	}{
		{`3`, 0, 3, ""},
		{`"3"`, 0, 3, ""},
		{`1e2`, 0, 100, ""},
		{`3.0`, 1, 3, ""},
		{`4294967295`, 0, 4294967295, ""},
		{`null`, 0, 0, ""},
		{``, 1, 0, "must be >= 1, got 0"},
		{`0`, 1, 0, "must be >= 1, got 0"},
		{`-2`, 1, 0, "must be >= 1, got -2"},
		{`4294967296`, 0, 0, "must be <= 4294967295, got 4294967296"},
		{`2.5`, 0, 0, "want an integer, got 2.5"},
		{`" 3"`, 0, 0, `want an integer, got " 3"`},
		{`true`, 0, 0, "want an integer, got a boolean"},
		{`{"value":3}`, 0, 0, "want an integer, got an object"},
	} {
		got, err := lb.ParseUint32(json.RawMessage(tc.in), tc.lowest)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("ParseUint32(%s, %d) = %d, %v; want %d", tc.in, tc.lowest, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || err.Error() != tc.err) {
			t.Errorf("ParseUint32(%s, %d) error = %v, want %q", tc.in, tc.lowest, err, tc.err)
		}
	}
}

// TestConfigOf: a policy's config arrives as a value, a pointer or nil; any
// other type is rejected with ErrBadResolverState.
func TestConfigOf(t *testing.T) {
	type cfg struct{ N int }
	for _, tc := range []struct {
		in   lb.Config
		want cfg
	}{{nil, cfg{}}, {cfg{N: 1}, cfg{N: 1}}, {&cfg{N: 2}, cfg{N: 2}}, {(*cfg)(nil), cfg{}}} {
		if got, err := lb.ConfigOf[cfg]("p", tc.in); err != nil || got != tc.want {
			t.Errorf("ConfigOf(%#v) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	_, err := lb.ConfigOf[cfg]("p", "other")
	const want = "p: config of type string, want lb_test.cfg: lb: bad resolver state"
	if !errors.Is(err, lb.ErrBadResolverState) || err.Error() != want {
		t.Fatalf("ConfigOf(string) error %q, want %q", err, want)
	}
}

// Configs follow the one JSON toolkit's rules, as EDS files do: a key given
// twice is an error at its path, at the top and inside a decoded value.
func TestConfigDuplicateKeys(t *testing.T) {
	if _, err := lb.ParseConfigObject(json.RawMessage(`{"a":1,"a":2}`)); err == nil || err.Error() != "a: field given twice" {
		t.Errorf("ParseConfigObject with a repeated key: %v, want a: field given twice", err)
	}
	if _, err := lb.ParseConfigObject(json.RawMessage(`{"children":{"p0":{},"p0":{}}}`)); err == nil || err.Error() != "children.p0: field given twice" {
		t.Errorf("ParseConfigObject with a repeated nested key: %v, want children.p0: field given twice", err)
	}
	obj, err := lb.ParseConfigObject(json.RawMessage(`{"children":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.Unknown(); len(got) != 1 || got[0] != "children" {
		t.Errorf("Unknown() = %q, want [children]", got)
	}
	if _, err := lb.ParsePolicyList(json.RawMessage(`[{"x":{},"x":{}}]`)); err == nil || err.Error() != "[0].x: field given twice" {
		t.Errorf("ParsePolicyList with a repeated key: %v", err)
	}
}
