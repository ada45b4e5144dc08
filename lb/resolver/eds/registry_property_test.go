package eds_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	_ "github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	_ "github.com/lbkit/lbkit/lb/weightedtarget"
	_ "github.com/lbkit/lbkit/lb/wrr"
)

// parseWithRegistry parses st's loadBalancingConfig with lbkit's policy
// registry.
func parseWithRegistry(st resolver.State) error {
	var sc struct {
		LoadBalancingConfig json.RawMessage `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal(st.ServiceConfig, &sc); err != nil {
		return err
	}
	p, err := lb.ParseLoadBalancingConfig(sc.LoadBalancingConfig)
	if err != nil {
		return err
	}
	if p.Name != "priority_experimental" {
		return fmt.Errorf("the registry chose %q, want priority_experimental", p.Name)
	}
	return nil
}

func TestPropertyConfigParsesWithRegistry(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawAssignment(t)
		cla, err := eds.Parse(g.json)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		st, err := new(eds.Namer).State(cla)
		if err != nil {
			t.Fatalf("State: %v", err)
		}
		if err := parseWithRegistry(st); err != nil {
			t.Fatalf("the registry rejects %s: %v", st.ServiceConfig, err)
		}
	})
}

func TestGoldenConfigsParseWithRegistry(t *testing.T) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		cla, err := eds.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		st, err := new(eds.Namer).State(cla)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if err := parseWithRegistry(st); err != nil {
			t.Errorf("%s: the registry rejects %s: %v", in, st.ServiceConfig, err)
		}
	}
}
