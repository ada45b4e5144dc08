package priority

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
		"children": {
			"p0": {"config": [{"unknown_policy": {}}, {"test_leaf": {}}], "ignoreReresolutionRequests": true},
			"p1": {"config": [{"test_script": {"id": "x"}}], "ignore_reresolution_requests": true},
			"p2": {"config": [{"test_leaf": {}}], "unknownField": 1}
		},
		"priorities": ["p2", "p0", "p1"],
		"unknownTopLevel": {}
	}`)
	if got := strings.Join(cfg.Priorities, ","); got != "p2,p0,p1" {
		t.Errorf("Priorities = %s", got)
	}
	for name, want := range map[string]struct {
		policy string
		ignore bool
	}{"p0": {lbtest.LeafName, true}, "p1": {lbtest.ScriptName, true}, "p2": {lbtest.LeafName, false}} {
		c := cfg.Children[name]
		if c.Policy == nil || c.Policy.Name != want.policy || c.IgnoreReresolutionRequests != want.ignore {
			t.Errorf("child %s = %+v, want policy %s ignore %v", name, c, want.policy, want.ignore)
		}
	}
	if cfg.Children["p1"].Policy.Config == nil {
		t.Errorf("child config not parsed by the child's builder")
	}

	for _, js := range []string{``, `null`, `{}`, `{"children": {}, "priorities": []}`, `{"children": null, "priorities": null}`} {
		cfg, err := parseConfig(json.RawMessage(js), testRegistry)
		if err != nil || len(cfg.Children) != 0 || len(cfg.Priorities) != 0 {
			t.Errorf("parseConfig(%q) = %+v, %v; want an empty config", js, cfg, err)
		}
	}

	// Through the registry, as a service config would.
	p, err := lb.ParseLoadBalancingConfig(json.RawMessage(`[{"priority_experimental": {"children": {"a": {"config": [{"pick_first": {}}]}}, "priorities": ["a"]}}]`))
	if err != nil || p.Name != Name {
		t.Fatalf("ParseLoadBalancingConfig: %v, %v", p, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	leaf := `{"config": [{"test_leaf": {}}]}`
	for _, tc := range []struct {
		name, js, path, msg string
	}{
		{"not an object", `[1]`, "", "want a JSON object"},
		{"children not an object", `{"children": [], "priorities": []}`, "children", ""},
		{"priorities not a list", `{"children": {}, "priorities": "p0"}`, "priorities", ""},
		{"priority names no child", `{"children": {"p0": ` + leaf + `}, "priorities": ["p0", "p9"]}`, "priorities[1]", `"p9" names no child`},
		{"name twice", `{"children": {"p0": ` + leaf + `}, "priorities": ["p0", "p0"]}`, "priorities[1]", "listed twice (first at priorities[0])"},
		{"child not in priorities", `{"children": {"p0": ` + leaf + `, "p5": ` + leaf + `}, "priorities": ["p0"]}`, `children["p5"]`, "not listed in priorities"},
		{"child empty config list", `{"children": {"p1": {"config": []}}, "priorities": ["p1"]}`, `children["p1"].config`, "empty policy list"},
		{"child missing config", `{"children": {"p1": {}}, "priorities": ["p1"]}`, `children["p1"].config`, "empty policy list"},
		{"child null", `{"children": {"p1": null}, "priorities": ["p1"]}`, `children["p1"].config`, "empty policy list"},
		{"child not an object", `{"children": {"p1": "leaf"}, "priorities": ["p1"]}`, `children["p1"]`, "want a JSON object"},
		{"child unsupported policy", `{"children": {"p1": {"config": [{"no_such_policy": {}}]}}, "priorities": ["p1"]}`, `children["p1"].config`, "no registered policy"},
		{"child invalid policy config", `{"children": {"p1": {"config": [{"test_script": {"inline": "SOON"}}]}}, "priorities": ["p1"]}`, `children["p1"].config[0].test_script.inline`, "unknown state"},
		{"flag not a bool", `{"children": {"p1": {"config": [{"test_leaf": {}}], "ignoreReresolutionRequests": "yes"}}, "priorities": ["p1"]}`, `children["p1"].ignoreReresolutionRequests`, ""},
		{"nested priority error", `{"children": {"p1": {"config": [{"priority_experimental": {"priorities": ["x"]}}]}}, "priorities": ["p1"]}`,
			`children["p1"].config[0].priority_experimental.priorities[0]`, `"x" names no child`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(json.RawMessage(tc.js), testRegistry)
			if lbtest.WantConfigError(t, "parseConfig", err, tc.path) && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		configJSON(leafChild("p0"), leafChild("p1")),
		configJSON(scriptChild("a"), inlineChild("b", lb.Ready)),
		`{"children": {"p0": {"config": [{"test_leaf": {}}]}}, "priorities": ["p0", "p0"]}`,
		`{"children": {"p0": {"config": [{"priority_experimental": {}}]}}, "priorities": ["p0"]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, _, ok := lbtest.CheckConfigParse(t, NewBuilder().InRegistry(testRegistry), raw)
		if !ok {
			return
		}
		cfg := c.(*Config)
		// Accepted: the invariants the balancer relies on hold.
		if len(cfg.Priorities) != len(cfg.Children) {
			t.Fatalf("%d priorities for %d children", len(cfg.Priorities), len(cfg.Children))
		}
		seen := make(map[string]bool)
		for _, name := range cfg.Priorities {
			c, ok := cfg.Children[name]
			if !ok || seen[name] || c.Policy == nil || c.Policy.Builder == nil {
				t.Fatalf("priority %q: child %+v, listed before %v", name, c, seen[name])
			}
			seen[name] = true
		}
	})
}

// Children's policy lists are parsed against the registry the builder is
// bound to (lb.ParentBuilder).
func TestInRegistry(t *testing.T) {
	t.Parallel()
	js := `{"children":{"p0":{"config":[{"leaf_only_in_my_registry":{}}]}},"priorities":["p0"]}`
	if _, _, err := NewBuilder().ParseConfig(json.RawMessage(js)); err == nil {
		t.Fatal("the default registry resolved a policy registered elsewhere")
	}
	reg := lb.NewRegistry(lbtest.NewLeafBuilder("leaf_only_in_my_registry"))
	cfg, _, err := lb.ParseConfig(NewBuilder().InRegistry(reg), json.RawMessage(js))
	if err != nil {
		t.Fatalf("ParseConfig with the registry: %v", err)
	}
	if got := cfg.(*Config).Children["p0"].Policy.Name; got != "leaf_only_in_my_registry" {
		t.Fatalf("child policy %q", got)
	}
}

// parseConfig parses raw with a builder whose registry is reg and returns
// its *Config.
func parseConfig(raw json.RawMessage, reg *lb.Registry) (*Config, error) {
	c, _, err := lb.ParseConfig(NewBuilder().InRegistry(reg), raw)
	cfg, _ := c.(*Config)
	return cfg, err
}
