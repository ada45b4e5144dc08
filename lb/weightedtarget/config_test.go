package weightedtarget

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `{
		"targets": {
			"a": {"weight": 1, "childPolicy": [{"unknown_policy": {}}, {"test_leaf": {}}]},
			"b": {"weight": "3", "child_policy": [{"test_script": {"id": "x"}}], "unknownField": 1},
			"c": {"weight": 4294967295, "childPolicy": [{"test_leaf": {}}]},
			"d": {"weight": 2.0, "childPolicy": [{"test_leaf": {}}], "child_policy": [{"test_script": {}}]},
			"e": {"weight": 1e2, "childPolicy": [{"test_leaf": {}}]}
		},
		"unknownTopLevel": {}
	}`)
	for name, want := range map[string]struct {
		weight uint32
		policy string
	}{
		"a": {1, lbtest.LeafName},
		"b": {3, lbtest.ScriptName},
		"c": {4294967295, lbtest.LeafName},
		"d": {2, lbtest.LeafName}, // childPolicy wins over child_policy
		"e": {100, lbtest.LeafName},
	} {
		got := cfg.Targets[name]
		if got.Weight != want.weight || got.ChildPolicy == nil || got.ChildPolicy.Name != want.policy {
			t.Errorf("target %s = %+v, want weight %d policy %s", name, got, want.weight, want.policy)
		}
	}
	if len(cfg.Targets) != 5 {
		t.Errorf("%d targets, want 5", len(cfg.Targets))
	}
	if cfg.Targets["b"].ChildPolicy.Config == nil {
		t.Errorf("child config not parsed by the child's builder")
	}

	for _, js := range []string{``, `null`, `{}`, `{"targets": {}}`, `{"targets": null}`} {
		cfg, err := parseConfig(json.RawMessage(js), testRegistry)
		if err != nil || len(cfg.Targets) != 0 {
			t.Errorf("parseConfig(%q) = %+v, %v; want an empty config", js, cfg, err)
		}
	}

	// Through the registry, as a service config would.
	p, err := lb.ParseLoadBalancingConfig(json.RawMessage(`[{"weighted_target_experimental": ` +
		configJSON(targetSpec{name: "a", weight: 2, policy: `[{"weighted_round_robin": {}}]`}) + `}]`))
	if err != nil || p.Name != Name {
		t.Fatalf("ParseLoadBalancingConfig: %v, %v", p, err)
	}
	if _, ok := p.Config.(*Config); !ok {
		t.Fatalf("parsed config is a %T, want *Config", p.Config)
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	const pol = `"childPolicy": [{"test_leaf": {}}]`
	for _, tc := range []struct {
		name, js, path, msg string
	}{
		{"not an object", `[1]`, "", "want a JSON object"},
		{"targets not an object", `{"targets": []}`, "targets", ""},
		{"target not an object", `{"targets": {"a": 3}}`, `targets["a"]`, "want a JSON object, got a number"},
		{"weight 0", `{"targets": {"a": {"weight": 0, ` + pol + `}}}`, `targets["a"].weight`, "must be >= 1, got 0"},
		{"weight missing", `{"targets": {"a": {` + pol + `}}}`, `targets["a"].weight`, "must be >= 1, got 0"},
		{"weight null", `{"targets": {"a": {"weight": null, ` + pol + `}}}`, `targets["a"].weight`, "must be >= 1, got 0"},
		{"weight negative", `{"targets": {"a": {"weight": -2, ` + pol + `}}}`, `targets["a"].weight`, "must be >= 1, got -2"},
		{"weight too large", `{"targets": {"a": {"weight": 4294967296, ` + pol + `}}}`, `targets["a"].weight`, "must be <= 4294967295, got 4294967296"},
		{"weight huge exponent", `{"targets": {"a": {"weight": 1e400, ` + pol + `}}}`, `targets["a"].weight`, "must be <= 4294967295"},
		{"weight fraction", `{"targets": {"a": {"weight": 1.5, ` + pol + `}}}`, `targets["a"].weight`, "want an integer, got 1.5"},
		{"weight bool", `{"targets": {"a": {"weight": true, ` + pol + `}}}`, `targets["a"].weight`, "want an integer, got a boolean"},
		{"weight bad string", `{"targets": {"a": {"weight": "0x10", ` + pol + `}}}`, `targets["a"].weight`, `want an integer, got "0x10"`},
		{"weight string 0", `{"targets": {"a": {"weight": "0", ` + pol + `}}}`, `targets["a"].weight`, "must be >= 1, got 0"},
		{"policy missing", `{"targets": {"a": {"weight": 1}}}`, `targets["a"].childPolicy`, "empty policy list"},
		{"policy empty", `{"targets": {"a": {"weight": 1, "childPolicy": []}}}`, `targets["a"].childPolicy`, "empty policy list"},
		{"policy empty snake", `{"targets": {"a": {"weight": 1, "child_policy": []}}}`, `targets["a"].child_policy`, "empty policy list"},
		{"policy unregistered", `{"targets": {"a": {"weight": 1, "childPolicy": [{"nope": {}}]}}}`, `targets["a"].childPolicy`, "no registered policy"},
		{"policy invalid config", `{"targets": {"a": {"weight": 1, "childPolicy": [{"test_script": {"inline": "SOON"}}]}}}`,
			`targets["a"].childPolicy[0].test_script.inline`, "unknown state"},
		{"first bad target in name order", `{"targets": {"z": {"weight": 0, ` + pol + `}, "b": {"weight": 1}}}`, `targets["b"].childPolicy`, "empty policy list"},
		{"nested", `{"targets": {"a": {"weight": 1, "childPolicy": [{"weighted_target_experimental": {"targets": {"x": {"weight": 0}}}}]}}}`,
			`targets["a"].childPolicy[0].weighted_target_experimental.targets["x"].weight`, "must be >= 1, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(json.RawMessage(tc.js), testRegistry)
			if lbtest.WantConfigError(t, "parseConfig", err, tc.path) && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}
}

func TestValidateHandBuiltConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	leafPolicy := e.config(leafTarget("a", 1)).Targets["a"].ChildPolicy
	for _, cfg := range []lb.Config{
		nil,
		(*Config)(nil),
		&Config{Targets: map[string]Target{"a": {Weight: 0, ChildPolicy: leafPolicy}}},
		&Config{Targets: map[string]Target{"a": {Weight: 1}}},
	} {
		if err := e.h.UpdateAddresses(cfg); err == nil {
			t.Errorf("config %#v was accepted", cfg)
		}
	}
	if n := e.published(); n != 0 {
		t.Errorf("rejected configs published %d states", n)
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		configJSON(leafTarget("a", 1), leafTarget("b", 3)),
		configJSON(scriptTarget("a", 1), inlineTarget("b", 2, lb.Ready)),
		`{"targets": {"a": {"weight": "7", "child_policy": [{"test_leaf": {}}]}}}`,
		`{"targets": {"a": {"weight": 1e3, "childPolicy": [{"weighted_target_experimental": {}}]}}}`,
		`{"targets": {"a": {"weight": -1, "childPolicy": [{"test_leaf": {}}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, _, ok := lbtest.CheckConfigParse(t, Builder{}.InRegistry(testRegistry), raw)
		if !ok {
			return
		}
		cfg := c.(*Config)
		// Accepted: the invariants the balancer relies on hold.
		if err := cfg.validate(); err != nil {
			t.Fatalf("accepted config is invalid: %v", err)
		}
	})
}

// Targets' child policy lists are parsed against the builder's registry.
func TestBuilderRegistry(t *testing.T) {
	t.Parallel()
	js := `{"targets":{"a":{"weight":1,"childPolicy":[{"leaf_only_in_my_registry":{}}]}}}`
	if _, _, err := (Builder{}).ParseConfig(json.RawMessage(js)); err == nil {
		t.Fatal("the default registry resolved a policy registered elsewhere")
	}
	reg := lb.NewRegistry(lbtest.NewLeafBuilder("leaf_only_in_my_registry"))
	cfg, _, err := lb.ParseConfig(Builder{}.InRegistry(reg), json.RawMessage(js))
	if err != nil {
		t.Fatalf("ParseConfig with the registry: %v", err)
	}
	if got := cfg.(*Config).Targets["a"].ChildPolicy.Name; got != "leaf_only_in_my_registry" {
		t.Fatalf("child policy %q", got)
	}
}

// parseConfig parses raw with a builder whose registry is reg and returns
// its *Config.
func parseConfig(raw json.RawMessage, reg *lb.Registry) (*Config, error) {
	c, _, err := lb.ParseConfig(Builder{}.InRegistry(reg), raw)
	cfg, _ := c.(*Config)
	return cfg, err
}
