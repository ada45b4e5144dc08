package peakewma_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/peakewma"
	"github.com/lbkit/lbkit/lb/resolver"
)

// defaults is the config every absent field gives.
var defaults = peakewma.Config{
	DecayTime:      peakewma.DefaultDecayTime,
	DefaultRTT:     peakewma.DefaultDefaultRTT,
	FailurePenalty: peakewma.DefaultFailurePenalty,
}

// with returns defaults changed by f.
func with(f func(*peakewma.Config)) peakewma.Config {
	c := defaults
	f(&c)
	return c
}

// TestParseConfig: every field is an optional proto3 JSON duration within
// its range; anything else is a *lb.ConfigError naming the field.
func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    peakewma.Config
		errPath string // when non-empty or errAt is set, an error is wanted
		errAt   bool
	}{
		{in: ``, want: defaults},
		{in: `null`, want: defaults},
		{in: `{}`, want: defaults},
		{in: `{"decayTime": null, "defaultRtt": null, "failurePenalty": null}`, want: defaults},
		{in: `{"decayTime": "5s"}`, want: with(func(c *peakewma.Config) { c.DecayTime = 5 * time.Second })},
		{in: `{"decay_time": "0.1s"}`, want: with(func(c *peakewma.Config) { c.DecayTime = 100 * time.Millisecond })},
		{in: `{"decayTime": "3600s"}`, want: with(func(c *peakewma.Config) { c.DecayTime = time.Hour })},
		{in: `{"defaultRtt": "0.000000001s"}`, want: with(func(c *peakewma.Config) { c.DefaultRTT = 1 })},
		{in: `{"default_rtt": "0.030s", "failure_penalty": "2s"}`, want: with(func(c *peakewma.Config) {
			c.DefaultRTT = 30 * time.Millisecond
			c.FailurePenalty = 2 * time.Second
		})},
		{in: `{"unknown": 1, "failurePenalty": "0.5s"}`, want: with(func(c *peakewma.Config) { c.FailurePenalty = 500 * time.Millisecond })},
		{in: `{"DecayTime": "1s"}`, want: defaults}, // names are case-sensitive: unknown field
		{in: `{"decayTime": "0.099s"}`, errPath: "decayTime"},
		{in: `{"decayTime": "0s"}`, errPath: "decayTime"},
		{in: `{"decay_time": "-1s"}`, errPath: "decay_time"},
		{in: `{"decayTime": "3600.000000001s"}`, errPath: "decayTime"},
		{in: `{"decayTime": 10}`, errPath: "decayTime"},
		{in: `{"decayTime": "10"}`, errPath: "decayTime"},
		{in: `{"defaultRtt": "0s"}`, errPath: "defaultRtt"},
		{in: `{"default_rtt": "7200s"}`, errPath: "default_rtt"},
		{in: `{"failurePenalty": "0s"}`, errPath: "failurePenalty"},
		{in: `{"failurePenalty": "-0.5s"}`, errPath: "failurePenalty"},
		{in: `{"failure_penalty": "1e3s"}`, errPath: "failure_penalty"},
		{in: `{"failurePenalty": true}`, errPath: "failurePenalty"},
		{in: `[]`, errAt: true},
		{in: `{"decayTime": "1s"`, errAt: true},
	} {
		cfg, _, err := peakewma.Builder{}.ParseConfig([]byte(tc.in))
		if tc.errPath == "" && !tc.errAt {
			if err != nil || cfg != tc.want {
				t.Errorf("ParseConfig(%s) = %#v, %v; want %#v, nil", tc.in, cfg, err, tc.want)
			}
			continue
		}
		lbtest.WantConfigError(t, fmt.Sprintf("ParseConfig(%s) = %#v", tc.in, cfg), err, tc.errPath)
	}
}

// TestConfigThroughRegistry: the policy is registered under its name and
// its errors carry the full JSON path.
func TestConfigThroughRegistry(t *testing.T) {
	p, err := lb.ParseLoadBalancingConfig([]byte(`[{"peak_ewma_experimental": {"decayTime": "20s"}}]`))
	if want := with(func(c *peakewma.Config) { c.DecayTime = 20 * time.Second }); err != nil || p.Name != peakewma.Name || p.Config != want {
		t.Fatalf("ParseLoadBalancingConfig = %+v, %v", p, err)
	}
	_, err = lb.ParseLoadBalancingConfig([]byte(`[{"peak_ewma_experimental": {"failurePenalty": "-1s"}}]`))
	const want = `loadBalancingConfig[0].peak_ewma_experimental.failurePenalty: must be at least 1ns, got "-1s"`
	if err == nil || err.Error() != want {
		t.Fatalf("bad config error %q, want %q", err, want)
	}
}

// TestConfigTypes checks the BalancerConfig values an update may carry.
func TestConfigTypes(t *testing.T) {
	for _, cfg := range []lb.Config{nil, peakewma.Config{}, &defaults, (*peakewma.Config)(nil)} {
		h := lbtest.New(t)
		h.Build(peakewma.Builder{})
		if err := h.UpdateAddresses(cfg, resolver.Address{Addr: "a"}); err != nil {
			t.Errorf("update with config %#v: %v", cfg, err)
		}
	}
	h := lbtest.New(t)
	h.Build(peakewma.Builder{})
	if err := h.UpdateAddresses("not a config", resolver.Address{Addr: "a"}); !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("update with a config of the wrong type = %v, want ErrBadResolverState", err)
	}
	h.WantEvents() // nothing created, nothing published
}

// FuzzParseConfig checks that no input panics, that a rejected input's error
// is a *lb.ConfigError, that parsing is deterministic, and that an accepted
// config's durations are within their ranges.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"decayTime":"5s"}`, `{"decayTime":"0.01s"}`, `{"failure_penalty":"-1s"}`,
		`{"defaultRtt":"0.000000001s","failurePenalty":"3600s"}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, _, ok := lbtest.CheckConfigParse(t, peakewma.Builder{}, raw)
		if !ok {
			return
		}
		c, isConfig := cfg.(peakewma.Config)
		if !isConfig || c.DecayTime < peakewma.MinDecayTime || c.DecayTime > peakewma.MaxDuration ||
			c.DefaultRTT <= 0 || c.DefaultRTT > peakewma.MaxDuration ||
			c.FailurePenalty <= 0 || c.FailurePenalty > peakewma.MaxDuration {
			t.Fatalf("ParseConfig(%q) = %#v, want a Config with every duration in range", raw, cfg)
		}
	})
}

func ExampleBuilder_ParseConfig() {
	cfg, _, err := peakewma.Builder{}.ParseConfig([]byte(`{"decayTime": "5s"}`))
	fmt.Printf("%+v %v\n", cfg, err)
	_, _, err = peakewma.Builder{}.ParseConfig([]byte(`{"decayTime": "0.01s"}`))
	fmt.Println(err)
	// Output:
	// {DecayTime:5s DefaultRTT:10ms FailurePenalty:1s} <nil>
	// decayTime: must be at least 100ms, got "0.01s"
}
