package endpointlist_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
)

// leafConfig is leafPolicy's parsed config.
type leafConfig struct{ n int }

// leafPolicy is a leaf policy with one field, "n".
type leafPolicy struct{}

func (leafPolicy) Name() string { return "example_leaf" }

func (leafPolicy) ReadConfig(obj lb.ConfigObject) (lb.Config, error) {
	var c leafConfig
	if err := obj.Decode(&c.n, "n"); err != nil {
		return nil, err
	}
	return c, nil
}

func (leafPolicy) Build(lb.ClientConn, lb.BuildOptions) lb.Balancer { return nil }

// A Builder takes its name from its policy and parses with its ReadConfig,
// listing the fields it does not know; on an error it returns a nil config
// and the policy's *lb.ConfigError; empty input is the empty object.
func TestBuilderReadsWithItsPolicy(t *testing.T) {
	var b endpointlist.Builder[leafPolicy]
	if b.Name() != "example_leaf" {
		t.Fatalf("Name() = %q", b.Name())
	}
	cfg, unknown, err := b.ParseConfig([]byte(`{"n": 3, "x": 1, "y": {}}`))
	if err != nil || cfg != (leafConfig{n: 3}) {
		t.Fatalf("ParseConfig = %#v, %v", cfg, err)
	}
	if want := []string{"x", "y"}; !slices.Equal(unknown, want) {
		t.Errorf("unknown %q, want %q", unknown, want)
	}
	if cfg, _, err := b.ParseConfig(nil); err != nil || cfg != (leafConfig{}) {
		t.Errorf("ParseConfig(nil) = %#v, %v", cfg, err)
	}
	cfg, _, err = b.ParseConfig([]byte(`{"n": "three"}`))
	var ce *lb.ConfigError
	if cfg != nil || !errors.As(err, &ce) || ce.Path != "n" {
		t.Errorf("ParseConfig(bad n) = %#v, %v; want nil and a ConfigError at n", cfg, err)
	}
}
