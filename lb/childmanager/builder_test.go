package childmanager_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
)

// wrapConfig is wrapPolicy's parsed config.
type wrapConfig struct{ child *lb.ParsedPolicy }

// wrapPolicy is a parent policy with one child policy list, "childPolicy".
type wrapPolicy struct{}

func (wrapPolicy) Name() string { return "test_wrap" }

func (wrapPolicy) ReadConfig(obj lb.ConfigObject, reg *lb.Registry) (lb.Config, error) {
	child, err := obj.PolicyList(reg, "childPolicy")
	if err != nil {
		return nil, err
	}
	return &wrapConfig{child: child}, nil
}

func (wrapPolicy) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &readyPolicy{cc: cc}
}

// A Builder takes its name and balancer from its policy and parses the
// child policy list against the registry it is registered in: the zero
// Builder against lb.DefaultRegistry, a registered one against its
// registry, with the child's unknown fields and nil on an error.
func TestBuilderParsesAgainstItsRegistry(t *testing.T) {
	var zero childmanager.Builder[wrapPolicy]
	if zero.Name() != "test_wrap" {
		t.Fatalf("Name() = %q", zero.Name())
	}
	const raw = `{"childPolicy": [{"example_ready": {"extra": 1}}], "other": 2}`
	if _, _, err := zero.ParseConfig([]byte(raw)); err == nil {
		t.Fatal("the zero Builder found example_ready in lb.DefaultRegistry")
	}
	reg := lb.NewRegistry(readyBuilder{}, zero)
	bound := reg.Get("test_wrap").(lb.ConfigParser)
	cfg, unknown, err := bound.ParseConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cfg.(*wrapConfig); !ok || c.child.Name != "example_ready" {
		t.Errorf("config %#v, want the child example_ready", cfg)
	}
	slices.Sort(unknown)
	if want := []string{"childPolicy[0].example_ready.extra", "other"}; !slices.Equal(unknown, want) {
		t.Errorf("unknown %q, want %q", unknown, want)
	}
	cfg, _, err = bound.ParseConfig([]byte(`{"childPolicy": []}`))
	var ce *lb.ConfigError
	if cfg != nil || !errors.As(err, &ce) {
		t.Errorf("ParseConfig(empty list) = %v, %v; want nil and a *lb.ConfigError", cfg, err)
	}
	if _, ok := bound.(lb.Builder).Build(parentCC{}, lb.BuildOptions{}).(*readyPolicy); !ok {
		t.Error("Build did not return the policy's balancer")
	}
}
