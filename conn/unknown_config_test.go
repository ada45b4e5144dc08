package conn

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/resolver"
)

const unknownFieldsWarning = "service config: unknown fields ignored (WithStrictConfig refuses them)"

// A misspelled service config field is ignored, as gRPC ignores it, but
// logged at WARN with its path once per distinct config (issue 17).
func TestUnknownServiceConfigFieldsWarnOncePerConfig(t *testing.T) {
	logs := &countingHandler{}
	c, r, _ := newTestChannel(t, WithLogger(slog.New(logs)))
	c.Connect()
	typo := `{"loadBalancingConfg":[{"round_robin":{}}],"healthCheckConfig":{"serviceNam":"x"}}`
	for range 3 {
		r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(typo)})
		settle(t, c)
	}
	if n := logs.count(unknownFieldsWarning); n != 1 {
		t.Fatalf("%d warnings for one config published three times, want 1", n)
	}
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(`{"loadBalancingPolicy":"round_robin","x":1}`)})
	settle(t, c)
	if n := logs.count(unknownFieldsWarning); n != 2 {
		t.Fatalf("%d warnings after a second distinct config, want 2", n)
	}
	sc, err := parseServiceConfig([]byte(typo), c.cfg.registry, false)
	if err != nil || strings.Join(sc.unknown, " ") != "loadBalancingConfg healthCheckConfig.serviceNam" {
		t.Fatalf("unknown = %q, %v; want [loadBalancingConfg healthCheckConfig.serviceNam]", sc.unknown, err)
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
	logs := &countingHandler{}
	c, r, _ := newTestChannel(t, WithLogger(slog.New(logs)), WithStrictConfig())
	c.Connect()
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(`{"loadBalancingConfig":[{"round_robin":{}}]}`)})
	settle(t, c)
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(`{"loadBalancingConfig":[{"pick_first":{}}],"typo":1}`)})
	settle(t, c)
	if n := logs.count("invalid service config; keeping the last valid one"); n != 1 {
		t.Fatalf("%d invalid-config warnings, want 1", n)
	}
	if c.lastSC == nil || c.lastSC.policy.Name != "round_robin" {
		t.Fatalf("last valid config replaced by one with an unknown field")
	}
}
