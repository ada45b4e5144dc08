package conn

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

const unknownFieldsWarning = "service config: unknown fields ignored (WithStrictConfig refuses them)"

// A misspelled service config field is ignored, as gRPC ignores it, but
// logged at WARN with its path once per distinct config (issue 17).
func TestUnknownServiceConfigFieldsWarnOncePerConfig(t *testing.T) {
	logs := &lbtest.Logs{}
	c, r, _ := newTestChannel(t, WithLogger(slog.New(logs)))
	c.Connect()
	typo := `{"loadBalancingConfg":[{"round_robin":{}}],"healthCheckConfig":{"serviceNam":"x"}}`
	for range 3 {
		r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(typo)})
		settle(t, c)
	}
	if n := logs.Count(slog.LevelWarn, unknownFieldsWarning); n != 1 {
		t.Fatalf("%d warnings for one config published three times, want 1", n)
	}
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(`{"loadBalancingPolicy":"round_robin","x":1}`)})
	settle(t, c)
	if n := logs.Count(slog.LevelWarn, unknownFieldsWarning); n != 2 {
		t.Fatalf("%d warnings after a second distinct config, want 2", n)
	}
	sc, err := parseServiceConfig([]byte(typo), c.cfg.registry, false)
	if err != nil || strings.Join(sc.unknown, " ") != "loadBalancingConfg healthCheckConfig.serviceNam" {
		t.Fatalf("unknown = %q, %v; want [loadBalancingConfg healthCheckConfig.serviceNam]", sc.unknown, err)
	}
	nested := `{"loadBalancingConfig":[{"priority_experimental":{"children":{"p0":{"config":[{"weighted_round_robin":{"randomStrat":true}}],"extra":1}},"priorities":["p0"]}}]}`
	sc, err = parseServiceConfig([]byte(nested), c.cfg.registry, false)
	want := `loadBalancingConfig[0].priority_experimental.children["p0"].extra loadBalancingConfig[0].priority_experimental.children["p0"].config[0].weighted_round_robin.randomStrat`
	if err != nil || strings.Join(sc.unknown, " ") != want {
		t.Fatalf("unknown = %q, %v; want %s", sc.unknown, err, want)
	}
	if _, err := parseServiceConfig([]byte(nested), c.cfg.registry, true); err == nil || !strings.Contains(err.Error(), `children["p0"].extra: unknown field`) {
		t.Fatalf("strict parse of a nested unknown field: %v", err)
	}
	if sc, err := parseServiceConfig([]byte(`{"methodConfig":[],"retryThrottling":{}}`), c.cfg.registry, true); err != nil || len(sc.unknown) != 0 {
		t.Fatalf("gRPC's other fields: %v, %v; want them known", sc, err)
	}
}

// WithStrictConfig refuses a config with an unknown field, naming its path.
func TestStrictConfigRefusesUnknownFields(t *testing.T) {
	_, err := New("test:///svc", WithResolver(&testResolver{}), WithStrictConfig(),
		WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}],"loadBalancingConfg":[]}`))
	if err == nil || !strings.Contains(err.Error(), "service config: loadBalancingConfg: unknown field") {
		t.Fatalf("New = %v, want an error naming loadBalancingConfg", err)
	}
	logs := &lbtest.Logs{}
	c, r, _ := newTestChannel(t, WithLogger(slog.New(logs)), WithStrictConfig())
	c.Connect()
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(`{"loadBalancingConfig":[{"round_robin":{}}]}`)})
	settle(t, c)
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(`{"loadBalancingConfig":[{"pick_first":{}}],"typo":1}`)})
	settle(t, c)
	if n := logs.Count(slog.LevelWarn, "invalid service config; keeping the last valid one"); n != 1 {
		t.Fatalf("%d invalid-config warnings, want 1", n)
	}
	if c.lastSC == nil || c.lastSC.policy.Name != "round_robin" {
		t.Fatalf("last valid config replaced by one with an unknown field")
	}
}

// Every in-tree policy reports the fields it does not know, nested
// sub-objects and child policies included.
func TestPoliciesReportUnknownFields(t *testing.T) {
	for _, tc := range []struct{ lbc, want string }{
		{`{"pick_first":{"shuffleAddressList":true,"shufle":1}}`, "pick_first.shufle"},
		{`{"round_robin":{"x":1}}`, "round_robin.x"},
		{`{"least_request_experimental":{"choiceCount":3,"choices":2}}`, "least_request_experimental.choices"},
		{`{"weighted_target_experimental":{"targets":{"a":{"weight":1,"wieght":2,"childPolicy":[{"round_robin":{}}]}},"t":1}}`,
			`weighted_target_experimental.t weighted_target_experimental.targets["a"].wieght`},
		{`{"outlier_detection_experimental":{"intervall":"1s","successRateEjection":{"stdevFactor":1900,"x":1},"childPolicy":[{"pick_first":{"y":1}}]}}`,
			"outlier_detection_experimental.intervall outlier_detection_experimental.successRateEjection.x outlier_detection_experimental.childPolicy[0].pick_first.y"},
	} {
		sc, err := parseServiceConfig([]byte(`{"loadBalancingConfig":[`+tc.lbc+`]}`), lb.DefaultRegistry(), false)
		if err != nil {
			t.Fatalf("%s: %v", tc.lbc, err)
		}
		var got []string
		for _, u := range sc.unknown {
			got = append(got, strings.TrimPrefix(u, "loadBalancingConfig[0]."))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: unknown %q, want %s", tc.lbc, got, tc.want)
		}
	}
}
