package peakewma_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/peakewma"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/slowstart"
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
	lbtest.CheckParseCases(t, peakewma.Builder{}, []lbtest.ParseCase[peakewma.Config]{
		{In: ``, Want: defaults},
		{In: `null`, Want: defaults},
		{In: `{}`, Want: defaults},
		{In: `{"decayTime": null, "defaultRtt": null, "failurePenalty": null}`, Want: defaults},
		{In: `{"decayTime": "5s"}`, Want: with(func(c *peakewma.Config) { c.DecayTime = 5 * time.Second })},
		{In: `{"decay_time": "0.1s"}`, Want: with(func(c *peakewma.Config) { c.DecayTime = 100 * time.Millisecond })},
		{In: `{"decayTime": "3600s"}`, Want: with(func(c *peakewma.Config) { c.DecayTime = time.Hour })},
		{In: `{"defaultRtt": "0.000000001s"}`, Want: with(func(c *peakewma.Config) { c.DefaultRTT = 1 })},
		{In: `{"default_rtt": "0.030s", "failure_penalty": "2s"}`, Want: with(func(c *peakewma.Config) {
			c.DefaultRTT = 30 * time.Millisecond
			c.FailurePenalty = 2 * time.Second
		})},
		{In: `{"unknown": 1, "failurePenalty": "0.5s"}`, Want: with(func(c *peakewma.Config) { c.FailurePenalty = 500 * time.Millisecond })},
		{In: `{"DecayTime": "1s"}`, Want: defaults}, // names are case-sensitive: unknown field
		{In: `{"decayTime": "0.099s"}`, ErrPath: "decayTime"},
		{In: `{"decayTime": "0s"}`, ErrPath: "decayTime"},
		{In: `{"decay_time": "-1s"}`, ErrPath: "decay_time"},
		{In: `{"decayTime": "3600.000000001s"}`, ErrPath: "decayTime"},
		{In: `{"decayTime": 10}`, ErrPath: "decayTime"},
		{In: `{"decayTime": "10"}`, ErrPath: "decayTime"},
		{In: `{"defaultRtt": "0s"}`, ErrPath: "defaultRtt"},
		{In: `{"default_rtt": "7200s"}`, ErrPath: "default_rtt"},
		{In: `{"failurePenalty": "0s"}`, ErrPath: "failurePenalty"},
		{In: `{"failurePenalty": "-0.5s"}`, ErrPath: "failurePenalty"},
		{In: `{"failure_penalty": "1e3s"}`, ErrPath: "failure_penalty"},
		{In: `{"failurePenalty": true}`, ErrPath: "failurePenalty"},
		{In: `[]`, Err: true},
		{In: `{"decayTime": "1s"`, Err: true},
		// Slow start is package slowstart's object; its errors are the
		// config's, under the field's name.
		{In: `{"slowStartConfig": null}`, Want: defaults},
		{In: `{"slowStartConfig": {}}`, ErrPath: "slowStartConfig.slowStartWindow"},
		{In: `{"slow_start_config": 1}`, ErrPath: "slow_start_config"},
		{In: `{"slowStartConfig": {"slowStartWindow": "10s", "aggression": 0}}`, ErrPath: "slowStartConfig.aggression"},
		{In: `{"slowStartConfig": {"slowStartWindow": "10s", "minWeightPercent": 101}}`, ErrPath: "slowStartConfig.minWeightPercent"},
	})
}

// TestParseSlowStart: "slowStartConfig" (or "slow_start_config") parses
// into Config.SlowStart with slowstart's defaults, and the typed config
// marshals back to JSON that parses to the same config.
func TestParseSlowStart(t *testing.T) {
	want := with(func(c *peakewma.Config) {
		c.SlowStart = &slowstart.Config{SlowStartWindow: 30 * time.Second, Aggression: 1, MinWeightPercent: 10}
	})
	for _, in := range []string{`{"slowStartConfig": {"slowStartWindow": "30s"}}`, `{"slow_start_config": {"slow_start_window": "30s", "aggression": 1}}`} {
		cfg, _, err := peakewma.Builder{}.ParseConfig([]byte(in))
		if err != nil || !reflect.DeepEqual(cfg, want) {
			t.Fatalf("ParseConfig(%s) = %+v, %v; want %+v with slow start %+v", in, cfg, err, want, *want.SlowStart)
		}
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		again, _, err := peakewma.Builder{}.ParseConfig(raw)
		if err != nil || !reflect.DeepEqual(again, want) {
			t.Fatalf("%s parses to %+v, %v; want %+v", raw, again, err, want)
		}
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

	// A Config built in Go is validated as a parsed one is.
	bad := peakewma.Config{SlowStart: &slowstart.Config{SlowStartWindow: -time.Second, Aggression: 1}}
	if err := h.UpdateAddresses(bad, resolver.Address{Addr: "a"}); !errors.Is(err, lb.ErrBadResolverState) || !lbtest.WantConfigError(t, "update", err, "slowStartConfig.slowStartWindow") {
		t.Fatalf("update with a negative slow start window = %v, want ErrBadResolverState at slowStartConfig.slowStartWindow", err)
	}
	h.WantEvents()
}

// FuzzParseConfig checks that no input panics, that a rejected input's error
// is a *lb.ConfigError, that parsing is deterministic, and that an accepted
// config's durations are within their ranges.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"decayTime":"5s"}`, `{"decayTime":"0.01s"}`, `{"failure_penalty":"-1s"}`,
		`{"defaultRtt":"0.000000001s","failurePenalty":"3600s"}`, `[`,
		`{"slowStartConfig":{"slowStartWindow":"30s","aggression":2,"minWeightPercent":5}}`, `{"slow_start_config":{"slow_start_window":"0s"}}`} {
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
		if c.SlowStart != nil {
			if err := c.SlowStart.Validate(); err != nil {
				t.Fatalf("ParseConfig(%q) accepted slow start %+v: %v", raw, *c.SlowStart, err)
			}
		}
	})
}

func ExampleBuilder_ParseConfig() {
	cfg, _, err := peakewma.Builder{}.ParseConfig([]byte(`{"decayTime": "5s"}`))
	fmt.Printf("%+v %v\n", cfg, err)
	_, _, err = peakewma.Builder{}.ParseConfig([]byte(`{"decayTime": "0.01s"}`))
	fmt.Println(err)
	// Output:
	// {DecayTime:5s DefaultRTT:10ms FailurePenalty:1s SlowStart:<nil>} <nil>
	// decayTime: must be at least 100ms, got "0.01s"
}
