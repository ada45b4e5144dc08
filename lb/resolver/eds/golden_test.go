package eds_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"github.com/lbkit/lbkit/lb/weight"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files")

// render describes a state for a golden file: one line per address with its
// path and weight, then the service config, indented.
func render(cla *eds.ClusterLoadAssignment, st resolver.State) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster: %s\naddresses:\n", cla.ClusterName)
	for _, a := range st.Addresses {
		path, _ := hierarchy.Get(a)
		quoted := make([]string, len(path))
		for i, p := range path {
			quoted[i] = strconv.Quote(p)
		}
		w, ok := weight.Get(a)
		ws := "none"
		if ok {
			ws = strconv.FormatUint(uint64(w), 10)
		}
		drain := ""
		if draining.Is(a) {
			drain = " draining"
		}
		fmt.Fprintf(&b, "  %s path=[%s] weight=%s%s\n", a.Addr, strings.Join(quoted, ", "), ws, drain)
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, st.ServiceConfig, "", "  "); err != nil {
		return "", fmt.Errorf("service config %s: %w", st.ServiceConfig, err)
	}
	fmt.Fprintf(&b, "service config:\n%s\n", ind.String())
	return b.String(), nil
}

func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata/*.json (err %v)", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			cla, err := eds.Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			st, err := new(eds.Namer).State(cla)
			if err != nil {
				t.Fatalf("State: %v", err)
			}
			if !json.Valid(st.ServiceConfig) || bytes.ContainsAny(st.ServiceConfig, " \n\t") {
				t.Errorf("service config is not compact JSON: %s", st.ServiceConfig)
			}
			got, err := render(cla, st)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("state of %s differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", in, golden, got, want)
			}
		})
	}
}

// The two spellings of proto3 JSON field names give the same assignment.
func TestSnakeAndCamelCaseAgree(t *testing.T) {
	parse := func(file string) *eds.ClusterLoadAssignment {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		cla, err := eds.Parse(data)
		if err != nil {
			t.Fatalf("Parse(%s): %v", file, err)
		}
		return cla
	}
	snake, camel := parse("snake_case.json"), parse("camel_case.json")
	if fmt.Sprintf("%+v", snake) != fmt.Sprintf("%+v", camel) {
		t.Errorf("snake_case.json gives %+v\ncamel_case.json gives %+v", snake, camel)
	}
}
