package wrr_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/wrr"
)

var randomStart = wrr.Config{RandomStart: true}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    wrr.Config
		errPath string // when non-empty or errAt is set, an error is wanted
		errAt   bool
	}{
		{in: ``},
		{in: `null`},
		{in: `{}`},
		{in: ` {"randomStart": true} `, want: randomStart},
		{in: `{"randomStart": false}`},
		{in: `{"randomStart": null}`},
		{in: `{"random_start": true}`, want: randomStart},
		// Unknown fields are ignored; names are case-sensitive, so
		// "RandomStart" is an unknown field.
		// gRFC A58's fields.
		{in: `{"enableOobLoadReport": false, "randomStart": true}`, want: randomStart},
		{in: `{"enableOobLoadReport": true, "randomStart": true}`, errPath: "enableOobLoadReport"},
		{in: `{"enable_oob_load_report": true}`, errPath: "enable_oob_load_report"},
		{in: `{"blackoutPeriod": "1s", "weightExpirationPeriod": "60s", "weightUpdatePeriod": "0.5s", "errorUtilizationPenalty": 2.5, "oobReportingPeriod": "5s"}`,
			want: wrr.Config{LoadReports: wrr.LoadReportConfig{BlackoutPeriod: time.Second, WeightExpirationPeriod: time.Minute,
				WeightUpdatePeriod: 500 * time.Millisecond, ErrorUtilizationPenalty: 2.5, OOBReportingPeriod: 5 * time.Second}}},
		{in: `{"blackout_period": "0s", "error_utilization_penalty": "0"}`,
			want: wrr.Config{LoadReports: wrr.LoadReportConfig{BlackoutPeriod: wrr.NoBlackout, ErrorUtilizationPenalty: wrr.NoErrorPenalty}}},
		{in: `{"weightUpdatePeriod": "0s"}`, want: wrr.Config{LoadReports: wrr.LoadReportConfig{WeightUpdatePeriod: wrr.MinWeightUpdatePeriod}}},
		{in: `{"blackoutPeriod": "-1s"}`, errPath: "blackoutPeriod"},
		{in: `{"blackoutPeriod": 10}`, errPath: "blackoutPeriod"},
		{in: `{"weightExpirationPeriod": "0s"}`, errPath: "weightExpirationPeriod"},
		{in: `{"weightUpdatePeriod": "-0.1s"}`, errPath: "weightUpdatePeriod"},
		{in: `{"errorUtilizationPenalty": -1}`, errPath: "errorUtilizationPenalty"},
		{in: `{"errorUtilizationPenalty": "NaN"}`, errPath: "errorUtilizationPenalty"},
		{in: `{"errorUtilizationPenalty": "x"}`, errPath: "errorUtilizationPenalty"},
		{in: `{"errorUtilizationPenalty": null}`},
		{in: `{"RandomStart": true}`},
		{in: `{"randomStart": "true"}`, errPath: "randomStart"},
		{in: `{"randomStart": 1}`, errPath: "randomStart"},
		{in: `{"random_start": {}}`, errPath: "random_start"},
		{in: `{"randomStart": [true]}`, errPath: "randomStart"},
		{in: `[]`, errAt: true},
		{in: `"randomStart"`, errAt: true},
		{in: `{"randomStart": tru}`, errAt: true},
	} {
		cfg, _, err := wrr.Builder{}.ParseConfig([]byte(tc.in))
		if tc.errPath == "" && !tc.errAt {
			if err != nil || cfg != tc.want {
				t.Errorf("ParseConfig(%s) = %#v, %v; want %#v, nil", tc.in, cfg, err, tc.want)
			}
			continue
		}
		lbtest.WantConfigError(t, fmt.Sprintf("ParseConfig(%s) = %#v", tc.in, cfg), err, tc.errPath)
	}
}

func TestConfigThroughRegistry(t *testing.T) {
	if b, ok := lb.Get(wrr.Name).(wrr.Builder); !ok || b.Name() != "weighted_round_robin" {
		t.Fatalf("lb.Get(%q) = %#v, want wrr.Builder", wrr.Name, lb.Get(wrr.Name))
	}
	p, err := lb.ParseLoadBalancingConfig([]byte(`[{"weighted_round_robin": {"randomStart": true}}]`))
	if err != nil || p.Name != wrr.Name || p.Config != randomStart {
		t.Fatalf("ParseLoadBalancingConfig = %+v, %v; want weighted_round_robin with %+v", p, err, randomStart)
	}
	// The service config of the proposal: an empty object.
	p, err = lb.ParseLoadBalancingConfig([]byte(`[{"weighted_round_robin": {}}]`))
	if err != nil || p.Name != wrr.Name || p.Config != (wrr.Config{}) {
		t.Fatalf("ParseLoadBalancingConfig({}) = %+v, %v; want weighted_round_robin with the zero Config", p, err)
	}
	_, err = lb.ParseLoadBalancingConfig([]byte(`[{"weighted_round_robin": {"randomStart": 3}}]`))
	const want = `loadBalancingConfig[0].weighted_round_robin.randomStart: want bool, got number`
	if err == nil || err.Error() != want {
		t.Fatalf("bad config error %q, want %q", err, want)
	}

	h := lbtest.New(t)
	b, cfg := h.BuildPolicy(wrr.Name, `{"randomStart": true}`)
	if b == nil || cfg != randomStart {
		t.Fatalf("BuildPolicy = %v, %#v", b, cfg)
	}
}

// TestConfigTypes checks the BalancerConfig values an update may carry: a
// Config, a *Config, nil, and anything else (rejected).
func TestConfigTypes(t *testing.T) {
	for _, cfg := range []lb.Config{nil, wrr.Config{}, &wrr.Config{}, (*wrr.Config)(nil), &randomStart} {
		e := newEnv(t, cfg)
		if err := e.update(eps(1, 2)...); err != nil {
			t.Errorf("update with config %#v: %v", cfg, err)
		}
	}
	e := newEnv(t, "not a wrr config")
	err := e.update(eps(1, 2)...)
	if !errors.Is(err, lb.ErrBadResolverState) {
		t.Fatalf("update with a config of the wrong type = %v, want ErrBadResolverState", err)
	}
	e.h.WantEvents() // nothing created, nothing published
}

// FuzzParseConfig checks that no input panics, that a rejected input's error
// is a *lb.ConfigError, and that parsing is deterministic.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"randomStart":true}`, `{"randomStart":"x"}`, `[`,
		`{"slowStartConfig":{"slowStartWindow":"30s","aggression":2,"minWeightPercent":5}}`, `{"slow_start_config":{"slow_start_window":"0s"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, _, ok := lbtest.CheckConfigParse(t, wrr.Builder{}, raw)
		if _, isConfig := cfg.(wrr.Config); ok && !isConfig {
			t.Fatalf("ParseConfig(%q) = %T, want wrr.Config", raw, cfg)
		}
	})
}

func ExampleBuilder_ParseConfig() {
	cfg, _, err := wrr.Builder{}.ParseConfig([]byte(`{"randomStart": true}`))
	fmt.Printf("%+v %v\n", cfg, err)
	_, _, err = wrr.Builder{}.ParseConfig([]byte(`{"randomStart": "yes"}`))
	fmt.Println(err)
	// Output:
	// {RandomStart:true LoadReports:{BlackoutPeriod:0s WeightExpirationPeriod:0s WeightUpdatePeriod:0s ErrorUtilizationPenalty:0 OOBReportingPeriod:0s} SlowStart:<nil>} <nil>
	// randomStart: want bool, got string
}
