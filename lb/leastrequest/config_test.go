package leastrequest_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/leastrequest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// TestParseConfig pins A48's config rules: choiceCount defaults to 2, a
// value below 2 is rejected, a value above 10 is lowered to 10.
func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint32
		errPath string // when non-empty or errAt is set, an error is wanted
		errAt   bool
	}{
		{in: ``, want: 2},
		{in: `null`, want: 2},
		{in: `{}`, want: 2},
		{in: `{"choiceCount": null}`, want: 2},
		{in: `{"choiceCount": 2}`, want: 2},
		{in: `{"choiceCount": 3}`, want: 3},
		{in: `{"choiceCount": "7"}`, want: 7}, // proto3 JSON: a string holding a number
		{in: `{"choice_count": 10}`, want: 10},
		{in: `{"choiceCount": 11}`, want: 10},
		{in: `{"choiceCount": 4294967295}`, want: 10},
		{in: `{"unknown": 1, "choiceCount": 5}`, want: 5},
		// A48 ignores Envoy's activeRequestBias; slow start is lbkit's
		// (package slowstart), so its errors are the config's.
		{in: `{"activeRequestBias": {"defaultValue": 2}, "choiceCount": 3}`, want: 3},
		{in: `{"active_request_bias": "x"}`, want: 2},
		{in: `{"slowStartConfig": {}}`, errPath: "slowStartConfig.slowStartWindow"},
		{in: `{"slow_start_config": 1}`, errPath: "slow_start_config"},
		{in: `{"slowStartConfig": {"slowStartWindow": "10s", "aggression": 0}}`, errPath: "slowStartConfig.aggression"},
		{in: `{"ChoiceCount": 1}`, want: 2}, // names are case-sensitive: unknown field
		{in: `{"choiceCount": 1}`, errPath: "choiceCount"},
		{in: `{"choiceCount": 0}`, errPath: "choiceCount"},
		{in: `{"choice_count": -3}`, errPath: "choice_count"},
		{in: `{"choiceCount": 2.5}`, errPath: "choiceCount"},
		{in: `{"choiceCount": 4294967296}`, errPath: "choiceCount"},
		{in: `{"choiceCount": true}`, errPath: "choiceCount"},
		{in: `{"choiceCount": "x"}`, errPath: "choiceCount"},
		{in: `[]`, errAt: true},
		{in: `{"choiceCount": 2`, errAt: true},
	} {
		cfg, _, err := leastrequest.Builder{}.ParseConfig([]byte(tc.in))
		if tc.errPath == "" && !tc.errAt {
			if want := (leastrequest.Config{ChoiceCount: tc.want}); err != nil || cfg != want {
				t.Errorf("ParseConfig(%s) = %#v, %v; want %#v, nil", tc.in, cfg, err, want)
			}
			continue
		}
		lbtest.WantConfigError(t, fmt.Sprintf("ParseConfig(%s) = %#v", tc.in, cfg), err, tc.errPath)
	}
}

// TestConfigThroughRegistry: the policy is registered under A48's name and
// its errors carry the full JSON path.
func TestConfigThroughRegistry(t *testing.T) {
	p, err := lb.ParseLoadBalancingConfig([]byte(`[{"least_request_experimental": {"choiceCount": 3}}]`))
	if err != nil || p.Name != leastrequest.Name || p.Config != (leastrequest.Config{ChoiceCount: 3}) {
		t.Fatalf("ParseLoadBalancingConfig = %+v, %v", p, err)
	}
	_, err = lb.ParseLoadBalancingConfig([]byte(`[{"least_request_experimental": {"choiceCount": 1}}]`))
	const want = `loadBalancingConfig[0].least_request_experimental.choiceCount: must be >= 2, got 1`
	if err == nil || err.Error() != want {
		t.Fatalf("bad config error %q, want %q", err, want)
	}
}

// TestIgnoresExperimentalEnvironmentVariable: A48's temporary
// GRPC_EXPERIMENTAL_ENABLE_LEAST_REQUEST guard is left out on purpose (lbkit
// does not switch behaviour on environment variables): the policy is
// registered and parses its config whatever the variable says.
func TestIgnoresExperimentalEnvironmentVariable(t *testing.T) {
	for _, v := range []string{"false", "true", ""} {
		t.Setenv("GRPC_EXPERIMENTAL_ENABLE_LEAST_REQUEST", v)
		p, err := lb.ParseLoadBalancingConfig([]byte(`[{"least_request_experimental": {}}]`))
		if err != nil || p.Name != leastrequest.Name || p.Config != (leastrequest.Config{ChoiceCount: 2}) {
			t.Fatalf("variable %q: ParseLoadBalancingConfig = %+v, %v", v, p, err)
		}
	}
}

// TestConfigTypes checks the BalancerConfig values an update may carry.
func TestConfigTypes(t *testing.T) {
	for _, cfg := range []lb.Config{nil, leastrequest.Config{}, &leastrequest.Config{ChoiceCount: 3}, (*leastrequest.Config)(nil)} {
		h := lbtest.New(t)
		h.Build(leastrequest.Builder{})
		if err := h.UpdateAddresses(cfg, resolver.Address{Addr: "a"}); err != nil {
			t.Errorf("update with config %#v: %v", cfg, err)
		}
	}
	h := lbtest.New(t)
	h.Build(leastrequest.Builder{})
	if err := h.UpdateAddresses("not a config", resolver.Address{Addr: "a"}); !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("update with a config of the wrong type = %v, want ErrBadResolverState", err)
	}
	h.WantEvents() // nothing created, nothing published
}

// FuzzParseConfig checks that no input panics, that a rejected input's error
// is a *lb.ConfigError, that parsing is deterministic, and that an accepted
// choice count is within A48's bounds.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"choiceCount":3}`, `{"choiceCount":1}`, `{"choice_count":"11"}`, `[`,
		`{"slowStartConfig":{"slowStartWindow":"30s","aggression":2,"minWeightPercent":5}}`, `{"slow_start_config":{"slow_start_window":"0s"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, _, ok := lbtest.CheckConfigParse(t, leastrequest.Builder{}, raw)
		if !ok {
			return
		}
		c, isConfig := cfg.(leastrequest.Config)
		if !isConfig || c.ChoiceCount < leastrequest.MinChoiceCount || c.ChoiceCount > leastrequest.MaxChoiceCount {
			t.Fatalf("ParseConfig(%q) = %#v, want a Config with ChoiceCount in [2, 10]", raw, cfg)
		}
	})
}

func ExampleBuilder_ParseConfig() {
	cfg, _, err := leastrequest.Builder{}.ParseConfig([]byte(`{"choiceCount": 25}`))
	fmt.Printf("%+v %v\n", cfg, err)
	_, _, err = leastrequest.Builder{}.ParseConfig([]byte(`{"choiceCount": 1}`))
	fmt.Println(err)
	// Output:
	// {ChoiceCount:10 SlowStart:<nil>} <nil>
	// choiceCount: must be >= 2, got 1
}
