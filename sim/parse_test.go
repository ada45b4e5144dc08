package sim

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
)

// base is a valid scenario; each bad case changes one part of it.
const base = `{"name": "x", "duration": "10s",
  "policies": [{"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}}],
  "clients": [{"rate": 10}],
  "backends": [{"name": "b", "count": 2, "service": {"constant": "0.01s"}}]%s}`

func TestBadScenariosNameTheirPath(t *testing.T) {
	for _, tc := range []struct{ in, path, reason string }{
		{`{"name": "x", "bogus": 1}`, "bogus", "unknown field"},
		{strings.Replace(base, `"rate": 10`, `"rate": -1`, 1), "clients[0].rate", "must be from 0"},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "keys": {"count": 100, "zipf": 1}`, 1), "clients[0].keys.zipf", "above 1"},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "keys": {"zipf": 1.2}`, 1), "clients[0].keys.count", "required"},
		{strings.Replace(base, `"count": 2,`, `"count": 2, "reportLoad": "yes",`, 1), "backends[0].reportLoad", ""},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "concurrency": 3`, 1), "clients[0]", "exactly one of"},
		{strings.Replace(base, `{"constant": "0.01s"}`, `{"normal": {"mean": "0.01s", "stddev": "-0.001s"}}`, 1), "backends[0].service.normal.stddev", "must be from 0s"},
		{strings.Replace(base, `{"constant": "0.01s"}`, `{"uniform": {"min": "0.02s", "max": "0.01s"}}`, 1), "backends[0].service.uniform.max", "at least min"},
		{strings.Replace(base, `{"constant": "0.01s"}`, `{"lognormal": {"median": "0.01s", "sigma": -1}}`, 1), "backends[0].service.lognormal.sigma", "must be from 0"},
		{strings.Replace(base, `{"constant": "0.01s"}`, `{"histogram": [{"le": "0.01s", "weight": 1}, {"le": "0.005s", "weight": 1}]}`, 1), "backends[0].service.histogram[1].le", "greater than"},
		{strings.Replace(base, `{"constant": "0.01s"}`, `{"gamma": {}}`, 1), "backends[0].service.gamma", "unknown distribution"},
		{strings.Replace(base, `{"round_robin": {}}`, `{"no_such_policy": {}}`, 1), "policies[0].serviceConfig.loadBalancingConfig", "no registered policy"},
		{strings.Replace(base, `{"round_robin": {}}`, `{"least_request_experimental": {"choiceCount": 1}}`, 1), "policies[0].serviceConfig.loadBalancingConfig[0].least_request_experimental.choiceCount", ""},
		{strings.Replace(base, `{"round_robin": {}}`, `{"weighted_round_robin": {"typo": true}}`, 1), "policies[0].serviceConfig.loadBalancingConfig[0].weighted_round_robin.typo", "unknown field"},
		{strings.Replace(base, `%s}`, `, "faults": [{"backend": "b7", "from": "1s", "refuse": {}}]}`, 1), "faults[0].backend", `no backend named "b7"`},
		{strings.Replace(base, `%s}`, `, "faults": [{"backend": "b1", "from": "2s", "until": "1s", "refuse": {}}]}`, 1), "faults[0].until", "after from"},
		{strings.Replace(base, `%s}`, `, "faults": [{"backend": "b1", "refuse": {}, "stop": {}}]}`, 1), "faults[0].stop", "one kind"},
		{strings.Replace(base, `%s}`, `, "faults": [{"backend": "b1", "slower": {"factor": 2, "latency": "1s"}}]}`, 1), "faults[0].slower", "exactly one of"},
		{strings.Replace(base, `"duration": "10s",`, ``, 1), "duration", "required when"},
		{strings.Replace(base, `"count": 2`, `"count": 0`, 1), "backends[0].count", "must be from 1"},
		{strings.Replace(strings.Replace(base, `"10s"`, `"86400s"`, 1), `"count": 2`, `"count": 1000`, 1), "duration", "cells"},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "backoff": {"baseDelay": "0s"}`, 1), "clients[0].backoff.baseDelay", "must be from 1ms"},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "backoff": {"baseDelay": "2s", "maxDelay": "1s"}`, 1), "clients[0].backoff.maxDelay", "at least baseDelay"},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "backoff": {"multiplier": 0.5}`, 1), "clients[0].backoff.multiplier", "must be from 1"},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "minConnectTimeout": "0s"`, 1), "clients[0].minConnectTimeout", "must be from 1ms"},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "healthCheck": {"interval": "1s", "every": 2}`, 1), "clients[0].healthCheck.every", "unknown field"},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "healthCheck": {"unhealthyThreshold": 0}`, 1), "clients[0].healthCheck.unhealthyThreshold", "must be from 1"},
		{strings.Replace(base, `"rate": 10`, `"rate": 10, "healthCheck": {"jitter": 2}`, 1), "clients[0].healthCheck.jitter", "must be from 0"},
		{strings.Replace(base, `"count": 2`, `"count": 2, "rtt": "-0.001s"`, 1), "backends[0].rtt", "must be from 0s"},
		{strings.Replace(base, `"count": 2`, `"count": 2, "loadFactor": -1`, 1), "backends[0].loadFactor", "must be from 0"},
		{strings.Replace(base, `%s}`, `, "faults": [{"backend": "b1", "from": "1s", "unhealthy": {"why": 1}}]}`, 1), "faults[0].unhealthy.why", "unknown field"},
		{strings.Replace(base, `%s}`, `, "faults": [{"backend": "b1", "from": "1s"}]}`, 1), "faults[0]", "unhealthy"},
		{`[]`, "", "want a JSON object"},
		{`{"name": "x", "name": "y"}`, "name", ""},
	} {
		in := strings.Replace(tc.in, "%s", "", 1)
		_, err := ParseScenario([]byte(in))
		var ce *lb.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%.80s...: error %v, want a *lb.ConfigError at %q", in, err, tc.path)
			continue
		}
		if ce.Path != tc.path || !strings.Contains(ce.Err.Error(), tc.reason) {
			t.Errorf("%.80s...: error %q, want path %q and a reason containing %q", in, err, tc.path, tc.reason)
		}
	}
}

// The example scenario of docs/simulation.md ("A scenario file") parses.
func TestDocsExampleScenarioParses(t *testing.T) {
	doc, err := os.ReadFile("../docs/simulation.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## A scenario file")
	_, block, ok2 := strings.Cut(after, "```json\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`docs/simulation.md has no JSON block under "## A scenario file"`)
	}
	if _, err := ParseScenario([]byte(block)); err != nil {
		t.Errorf("docs/simulation.md's example scenario: %v", err)
	}
}
