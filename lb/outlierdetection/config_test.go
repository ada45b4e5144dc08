package outlierdetection

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
)

const child = `"childPolicy": [{"test_leaf": {}}]`

func TestParseConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `{`+child+`}`)
	want := Config{Detection: Detection{
		Interval: 10 * time.Second, BaseEjectionTime: 30 * time.Second,
		MaxEjectionTime: 300 * time.Second, MaxEjectionPercent: 10,
	}}
	got := *cfg
	got.ChildPolicy = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
	if cfg.ChildPolicy == nil || cfg.ChildPolicy.Name != lbtest.LeafName {
		t.Errorf("child policy %+v, want %s", cfg.ChildPolicy, lbtest.LeafName)
	}

	cfg = mustParse(t, `{"successRateEjection": {}, "failurePercentageEjection": {}, `+child+`}`)
	if want := (SuccessRateEjection{1900, 100, 5, 100}); cfg.SuccessRateEjection == nil || *cfg.SuccessRateEjection != want {
		t.Errorf("successRateEjection defaults %+v, want %+v", cfg.SuccessRateEjection, want)
	}
	if want := (FailurePercentageEjection{85, 100, 5, 50}); cfg.FailurePercentageEjection == nil || *cfg.FailurePercentageEjection != want {
		t.Errorf("failurePercentageEjection defaults %+v, want %+v", cfg.FailurePercentageEjection, want)
	}
	if cfg := mustParse(t, `{"successRateEjection": null, `+child+`}`); cfg.enabled() {
		t.Error("successRateEjection null enables the algorithm")
	}
}

func TestParseConfigAllFields(t *testing.T) {
	t.Parallel()
	for _, js := range []string{
		`{"interval": "1.5s", "baseEjectionTime": "2s", "maxEjectionTime": "0s", "maxEjectionPercent": 100,
		  "successRateEjection": {"stdevFactor": 1000, "enforcementPercentage": 50, "minimumHosts": 2, "requestVolume": "7"},
		  "failurePercentageEjection": {"threshold": 100, "enforcementPercentage": 0, "minimumHosts": 0, "requestVolume": 1},
		  "childPolicy": [{"unregistered": {}}, {"pick_first": {}}]}`,
		`{"interval": "1.5s", "base_ejection_time": "2s", "max_ejection_time": "0s", "max_ejection_percent": 100,
		  "success_rate_ejection": {"stdev_factor": 1000, "enforcement_percentage": 50, "minimum_hosts": 2, "request_volume": 7},
		  "failure_percentage_ejection": {"threshold": 100, "enforcement_percentage": 0, "minimum_hosts": 0, "request_volume": 1},
		  "child_policy": [{"pick_first": {}}]}`,
	} {
		cfg := mustParse(t, js)
		got := *cfg
		if got.ChildPolicy == nil || got.ChildPolicy.Name != "pick_first" {
			t.Fatalf("child policy %+v", got.ChildPolicy)
		}
		got.ChildPolicy = nil
		want := Config{Detection: Detection{
			Interval: 1500 * time.Millisecond, BaseEjectionTime: 2 * time.Second, MaxEjectionTime: 0, MaxEjectionPercent: 100,
			SuccessRateEjection:       &SuccessRateEjection{1000, 50, 2, 7},
			FailurePercentageEjection: &FailurePercentageEjection{100, 0, 0, 1},
		}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parse %s:\n got %+v\nwant %+v", js, got, want)
		}
		if cfg.maxEjectionTime() != 2*time.Second {
			t.Errorf("max ejection time cap %v, want max(base, max) = 2s", cfg.maxEjectionTime())
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ js, path string }{
		{`[]`, ""},
		{`{}`, "childPolicy"},
		{`{"childPolicy": []}`, "childPolicy"},
		{`{"childPolicy": [{"nope": {}}]}`, "childPolicy"},
		{`{"childPolicy": [{"pick_first": {"shuffleAddressList": 1}}]}`, "childPolicy[0].pick_first.shuffleAddressList"},
		{`{"interval": "-1s", ` + child + `}`, "interval"},
		{`{"interval": "0s", ` + child + `}`, "interval"},
		{`{"interval": 10, ` + child + `}`, "interval"},
		{`{"interval": "10", ` + child + `}`, "interval"},
		{`{"baseEjectionTime": "-0.5s", ` + child + `}`, "baseEjectionTime"},
		{`{"base_ejection_time": "1.0000000001s", ` + child + `}`, "base_ejection_time"},
		{`{"maxEjectionTime": "315576000001s", ` + child + `}`, "maxEjectionTime"},
		{`{"maxEjectionTime": "315576000000s", ` + child + `}`, "maxEjectionTime"},
		{`{"maxEjectionTime": "9223372037s", ` + child + `}`, "maxEjectionTime"},
		{`{"maxEjectionPercent": 101, ` + child + `}`, "maxEjectionPercent"},
		{`{"maxEjectionPercent": -1, ` + child + `}`, "maxEjectionPercent"},
		{`{"maxEjectionPercent": 4294967296, ` + child + `}`, "maxEjectionPercent"},
		{`{"successRateEjection": [], ` + child + `}`, "successRateEjection"},
		{`{"successRateEjection": {"enforcementPercentage": 101}, ` + child + `}`, "successRateEjection.enforcementPercentage"},
		{`{"successRateEjection": {"stdevFactor": "x"}, ` + child + `}`, "successRateEjection.stdevFactor"},
		{`{"success_rate_ejection": {"minimum_hosts": 1.5}, ` + child + `}`, "success_rate_ejection.minimum_hosts"},
		{`{"failurePercentageEjection": {"threshold": 101}, ` + child + `}`, "failurePercentageEjection.threshold"},
		{`{"failurePercentageEjection": {"enforcementPercentage": 200}, ` + child + `}`, "failurePercentageEjection.enforcementPercentage"},
		{`{"failurePercentageEjection": {"requestVolume": true}, ` + child + `}`, "failurePercentageEjection.requestVolume"},
	} {
		cfg, _, err := lb.ParseConfig(Builder{}.InRegistry(testRegistry), json.RawMessage(tc.js))
		if cfg != nil {
			t.Errorf("ParseConfig(%s) returned %+v with its error", tc.js, cfg)
		}
		lbtest.WantConfigError(t, "ParseConfig("+tc.js+")", err, tc.path)
	}
}

func TestConfigThroughRegistry(t *testing.T) {
	t.Parallel()
	p, err := lb.ParseLoadBalancingConfig(json.RawMessage(`[{"outlier_detection_experimental": {"maxEjectionPercent": 300, ` + child + `}}]`))
	if p != nil {
		t.Fatalf("parsed %+v", p)
	}
	lbtest.WantConfigError(t, "ParseLoadBalancingConfig", err, "loadBalancingConfig[0].outlier_detection_experimental.maxEjectionPercent")
}

func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{` + child + `}`,
		`{"interval": "1.5s", "successRateEjection": {}, "failurePercentageEjection": {"threshold": 0}, ` + child + `}`,
		`{"base_ejection_time": "0.000000001s", "max_ejection_time": "315576000000s", "child_policy": [{"pick_first": {}}]}`,
		`{"maxEjectionPercent": "100", "successRateEjection": {"stdevFactor": 4294967295}, "childPolicy": [{"outlier_detection_experimental": {` + child + `}}]}`,
		`{"interval": "-0s", "childPolicy": null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, _, ok := lbtest.CheckConfigParse(t, Builder{}.InRegistry(testRegistry), raw)
		if !ok {
			return
		}
		cfg := c.(*Config)
		if err := cfg.validate(); err != nil {
			t.Fatalf("parse(%q) accepted a config that validate rejects: %v", raw, err)
		}
		if cfg.MaxEjectionPercent > 100 {
			t.Fatalf("parse(%q): maxEjectionPercent %d", raw, cfg.MaxEjectionPercent)
		}
	})
}

// The child policy list is parsed against the builder's registry.
func TestBuilderRegistry(t *testing.T) {
	js := `{"childPolicy":[{"leaf_only_in_my_registry":{"x":1}}]}`
	if _, _, err := (Builder{}).ParseConfig(json.RawMessage(js)); err == nil {
		t.Fatal("the default registry resolved a policy registered elsewhere")
	}
	reg := lb.NewRegistry(lbtest.NewLeafBuilder("leaf_only_in_my_registry"))
	cfg, unknown, err := lb.ParseConfig(Builder{}.InRegistry(reg), json.RawMessage(js))
	if err != nil {
		t.Fatalf("ParseConfig with the registry: %v", err)
	}
	if got := cfg.(*Config).ChildPolicy.Name; got != "leaf_only_in_my_registry" {
		t.Fatalf("child policy %q", got)
	}
	if want := "childPolicy[0].leaf_only_in_my_registry.x"; len(unknown) != 1 || unknown[0] != want {
		t.Fatalf("unknown %q, want [%s]", unknown, want)
	}
}
