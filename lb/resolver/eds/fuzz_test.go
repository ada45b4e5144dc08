package eds_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"github.com/lbkit/lbkit/lb/weight"
)

// isObjectDocument reports whether data is a valid UTF-8 JSON document
// whose top-level value is an object: the only documents whose errors must
// name a path.
func isObjectDocument(data []byte) bool {
	trimmed := bytes.TrimSpace(data)
	return utf8.Valid(data) && json.Valid(data) && len(trimmed) > 0 && trimmed[0] == '{'
}

// FuzzParse checks that Parse never panics, that every error wraps an
// *eds.Error whose Path is empty only for a document that is not a JSON
// object, and that every accepted assignment converts to a state.
func FuzzParse(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"cluster_name":"c","endpoints":[{"priority":"1e0","lb_endpoints":[]}]}`))
	f.Add([]byte(`{"cluster_name":"c","policy":{"drop_overloads":[{}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cla, err := eds.Parse(data)
		if err != nil {
			var e *eds.Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse error %v (%T) does not wrap *eds.Error", err, err)
			}
			if e.Path == "" && isObjectDocument(data) {
				t.Fatalf("Parse error %q names no path for a JSON object", err)
			}
			return
		}
		if err := cla.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate rejects: %v", err)
		}
		st, err := new(eds.Namer).State(cla)
		if err != nil {
			t.Fatalf("State of a parsed assignment: %v", err)
		}
		if !json.Valid(st.ServiceConfig) {
			t.Fatalf("invalid service config %s", st.ServiceConfig)
		}
		var sc generatedConfig
		if err := json.Unmarshal(st.ServiceConfig, &sc); err != nil || len(sc.LoadBalancingConfig) != 1 {
			t.Fatalf("service config %s: %v", st.ServiceConfig, err)
		}
		children := sc.LoadBalancingConfig[0]["priority_experimental"].Children
		for _, a := range st.Addresses {
			path, ok := hierarchy.Get(a)
			if !ok || len(path) != 2 {
				t.Fatalf("address %v has path %q", a, path)
			}
			child, ok := children[path[0]]
			if !ok || len(child.Config) != 1 {
				t.Fatalf("address %v: no child %q in %s", a, path[0], st.ServiceConfig)
			}
			if _, ok := child.Config[0]["weighted_target_experimental"].Targets[path[1]]; !ok {
				t.Fatalf("address %v: no target %q in %s", a, path[1], st.ServiceConfig)
			}
			if w, ok := weight.Get(a); !ok || w == 0 {
				t.Fatalf("address %v has weight %d (set %v)", a, w, ok)
			}
		}
		again, err := new(eds.Namer).State(cla)
		if err != nil || !bytes.Equal(again.ServiceConfig, st.ServiceConfig) {
			t.Fatalf("State is not deterministic: %s then %s (%v)", st.ServiceConfig, again.ServiceConfig, err)
		}
	})
}
