package clusterimpl

import (
	"errors"
	"reflect"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

func parse(t *testing.T, raw string) (*Config, []string, error) {
	t.Helper()
	c, unknown, err := Builder{}.InRegistry(lbtest.NewRegistry()).(Builder).ParseConfig([]byte(raw))
	if err != nil {
		return nil, unknown, err
	}
	return c.(*Config), unknown, nil
}

func TestParseConfig(t *testing.T) {
	cfg, unknown, err := parse(t, `{"cluster": "c", "maxConcurrentRequests": 7, "future": 1,
		"dropCategories": [{"category": "lb", "requestsPerMillion": 1000}, {"category": "throttle", "requests_per_million": "1000000", "x": 2}],
		"childPolicy": [{"test_leaf": {}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster != "c" || cfg.MaxConcurrentRequests == nil || *cfg.MaxConcurrentRequests != 7 || cfg.ChildPolicy == nil || cfg.ChildPolicy.Name != "test_leaf" {
		t.Errorf("parsed %+v", cfg)
	}
	if want := []DropCategory{{"lb", 1000}, {"throttle", Million}}; !reflect.DeepEqual(cfg.DropCategories, want) {
		t.Errorf("DropCategories = %+v, want %+v", cfg.DropCategories, want)
	}
	if want := []string{"future", "dropCategories[1].x"}; !reflect.DeepEqual(unknown, want) {
		t.Errorf("unknown = %q, want %q", unknown, want)
	}
	cfg, _, err = parse(t, `{"childPolicy": [{"test_leaf": {}}]}`)
	if err != nil || cfg.MaxConcurrentRequests != nil || cfg.DropCategories != nil {
		t.Errorf("minimal config: %+v, %v; want no limit and no drops", cfg, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ raw, path string }{
		{`{}`, "childPolicy"},
		{`{"childPolicy": []}`, "childPolicy"},
		{`{"cluster": 1, "childPolicy": [{"test_leaf": {}}]}`, "cluster"},
		{`{"maxConcurrentRequests": -1, "childPolicy": [{"test_leaf": {}}]}`, "maxConcurrentRequests"},
		{`{"maxConcurrentRequests": 4294967296, "childPolicy": [{"test_leaf": {}}]}`, "maxConcurrentRequests"},
		{`{"dropCategories": {}, "childPolicy": [{"test_leaf": {}}]}`, "dropCategories"},
		{`{"dropCategories": [1], "childPolicy": [{"test_leaf": {}}]}`, "dropCategories[0]"},
		{`{"dropCategories": [{"requestsPerMillion": 1}], "childPolicy": [{"test_leaf": {}}]}`, "dropCategories[0].category"},
		{`{"dropCategories": [{"category": "a", "requestsPerMillion": 1000001}], "childPolicy": [{"test_leaf": {}}]}`, "dropCategories[0].requestsPerMillion"},
		{`{"dropCategories": [{"category": "a"}, {"category": "b", "requestsPerMillion": 2.5}], "childPolicy": [{"test_leaf": {}}]}`, "dropCategories[1].requestsPerMillion"},
	} {
		_, _, err := parse(t, tc.raw)
		var ce *lb.ConfigError
		if !errors.As(err, &ce) || ce.Path != tc.path {
			t.Errorf("%s: err = %v, want a ConfigError at %s", tc.raw, err, tc.path)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"childPolicy": [{"test_leaf": {}}]}`,
		`{"cluster": "c", "maxConcurrentRequests": "7", "dropCategories": [{"category": "a", "requestsPerMillion": 1e6}], "child_policy": [{"test_leaf": {}}]}`,
		`{"max_concurrent_requests": null, "drop_categories": [{"category": "", "requests_per_million": 0}], "childPolicy": [{"test_leaf": {}}]}`,
		`{"dropCategories": [{}], "childPolicy": null}`,
	} {
		f.Add([]byte(seed))
	}
	reg := lbtest.NewRegistry()
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, _, ok := lbtest.CheckConfigParse(t, Builder{}.InRegistry(reg), raw)
		if !ok {
			return
		}
		for _, d := range c.(*Config).DropCategories {
			if d.Category == "" || d.RequestsPerMillion > Million {
				t.Fatalf("parse(%q) accepted the drop category %+v", raw, d)
			}
		}
	})
}
