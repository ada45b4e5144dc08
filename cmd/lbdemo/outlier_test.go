package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	_ "github.com/lbkit/lbkit/lb/outlierdetection"
	_ "github.com/lbkit/lbkit/lb/priority"
	_ "github.com/lbkit/lbkit/lb/weightedtarget"
	_ "github.com/lbkit/lbkit/lb/wrr"
)

// The rewritten eds service config puts outlier detection above each
// priority's weighted_target and still parses.
func TestWrapPrioritiesAddsOutlierDetection(t *testing.T) {
	in := `{"loadBalancingConfig":[{"priority_experimental":{"children":{"priority-0-0":{"config":[{"weighted_target_experimental":{"targets":{"a":{"weight":3,"childPolicy":[{"weighted_round_robin":{}}]}}}}]}},"priorities":["priority-0-0"]}}]}`
	out, err := wrapPriorities(json.RawMessage(in), odConfigFor(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"loadBalancingConfig":[{"priority_experimental":{"children":{"priority-0-0":{"config":[{"outlier_detection_experimental":{"interval":"1.000s","baseEjectionTime":"2.000s","maxEjectionTime":"4.000s","maxEjectionPercent":25,"failurePercentageEjection":{"threshold":50,"minimumHosts":2,"requestVolume":10},"childPolicy":[{"weighted_target_experimental":{"targets":{"a":{"weight":3,"childPolicy":[{"weighted_round_robin":{}}]}}}}]}}]}},"priorities":["priority-0-0"]}}]}`
	if string(out) != want {
		t.Fatalf("wrapped config:\n got  %s\n want %s", out, want)
	}
	var doc struct {
		LBC json.RawMessage `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.ParseLoadBalancingConfig(doc.LBC); err != nil {
		t.Fatalf("the wrapped config does not parse: %v", err)
	}
}
