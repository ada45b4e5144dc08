package roundrobin_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/roundrobin"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// TestParseConfig: round_robin's one field is slowStartConfig; other
// fields are ignored (and listed as unknown), and the slow start's errors
// carry their full path through the registry.
func TestParseConfig(t *testing.T) {
	cfg, unknown, err := roundrobin.Builder{}.ParseConfig([]byte(`{"slowStartConfig": {"slowStartWindow": "30s", "aggression": 2}, "x": 1}`))
	want := slowstart.Config{SlowStartWindow: 30 * time.Second, Aggression: 2, MinWeightPercent: slowstart.DefaultMinWeightPercent}
	if c, ok := cfg.(roundrobin.Config); err != nil || !ok || c.SlowStart == nil || *c.SlowStart != want || fmt.Sprint(unknown) != "[x]" {
		t.Fatalf("ParseConfig = %#v, %q, %v; want %+v, [x]", cfg, unknown, err, want)
	}
	_, err = lb.ParseLoadBalancingConfig([]byte(`[{"round_robin": {"slowStartConfig": {"slowStartWindow": "-1s"}}}]`))
	lbtest.WantConfigError(t, "negative window", err, "loadBalancingConfig[0].round_robin.slowStartConfig.slowStartWindow")
}

// FuzzParseConfig: any input gives a *lb.ConfigError naming a path, or a
// round_robin Config whose slow start, if any, is valid.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"x":[1]}`, `[`,
		`{"slowStartConfig":{"slowStartWindow":"30s","aggression":2,"minWeightPercent":5}}`,
		`{"slow_start_config":{"slow_start_window":"0s"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, _, ok := lbtest.CheckConfigParse(t, roundrobin.Builder{}, raw)
		if !ok {
			return
		}
		c, isConfig := cfg.(roundrobin.Config)
		if !isConfig {
			t.Fatalf("ParseConfig(%q) = %T, want roundrobin.Config", raw, cfg)
		}
		if c.SlowStart != nil {
			if err := c.SlowStart.Validate(); err != nil {
				t.Fatalf("ParseConfig(%q) = %+v: %v", raw, c.SlowStart, err)
			}
		}
	})
}
