package weightedtarget

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/lbkit/lbkit/lb"
)

// Config is the parsed config of a weighted_target_experimental balancer,
// gRFC A28's WeightedTargetConfig:
//
//	{
//	  "targets": {
//	    "localityA": {"weight": 1, "childPolicy": [{"round_robin": {}}]},
//	    "localityB": {"weight": 3, "childPolicy": [{"pick_first": {}}]}
//	  }
//	}
//
// Field names are case-sensitive; "child_policy" is accepted for
// "childPolicy", as proto3 JSON allows (if both are present, "childPolicy"
// wins). A weight may be a JSON number or a string holding one, as proto3
// JSON allows for integers; a number written with a fraction or an exponent
// is accepted when its value is whole (3.0, 1e2). Unknown fields are
// ignored, and a missing or null "targets" is empty. The parser rejects,
// naming the JSON path:
//
//   - a weight that is missing, 0 or negative
//     (targets["a"].weight: must be >= 1, got 0), above 2^32-1, not whole,
//     or not a number;
//   - a child policy list that is missing, empty or names no registered
//     policy, or whose first registered policy's config is invalid
//     (targets["a"].childPolicy: empty policy list);
//   - a target that is not a JSON object.
//
// A Config is immutable once parsed; balancers never change it.
type Config struct {
	// Targets maps a target's name, the first element of the
	// hierarchical path of its addresses, to its config.
	Targets map[string]Target
}

// Target is the config of one target.
type Target struct {
	// Weight is the target's share of the requests: while it is READY it
	// gets Weight picks in every run of sum-of-READY-weights picks. At
	// least 1.
	Weight uint32
	// ChildPolicy is the target's policy, the first registered entry of
	// its "childPolicy" list.
	ChildPolicy *lb.ParsedPolicy
}

// ReadConfig reads a [*Config] from obj; child policy lists are parsed
// against reg (nil: [lb.DefaultRegistry]).
func (policy) ReadConfig(obj lb.ConfigObject, reg *lb.Registry) (lb.Config, error) {
	var targets map[string]json.RawMessage
	if err := obj.Decode(&targets, "targets"); err != nil {
		return nil, err
	}
	cfg := &Config{Targets: make(map[string]Target, len(targets))}
	// Sorted, so that the error reported for a config with several bad
	// targets is always the same one.
	for _, name := range slices.Sorted(maps.Keys(targets)) {
		at := lb.JoinPath("targets", lb.KeyPath(name))
		target, err := obj.ObjectAt(at, targets[name])
		if err != nil {
			return nil, err
		}
		if cfg.Targets[name], err = readTarget(target, reg); err != nil {
			return nil, lb.PrefixConfigError(at, err)
		}
	}
	return cfg, nil
}

// readTarget reads one target's object; error paths are relative to it.
func readTarget(obj lb.ConfigObject, reg *lb.Registry) (Target, error) {
	wraw, _, _ := obj.Raw("weight")
	w, err := parseWeight(wraw)
	if err != nil {
		return Target{}, lb.PrefixConfigError("weight", err)
	}
	p, err := obj.PolicyList(reg, "childPolicy", "child_policy")
	if err != nil {
		return Target{}, err
	}
	return Target{Weight: w, ChildPolicy: p}, nil
}

// parseWeight parses a weight: a proto3 JSON uint32 ([lb.ParseUint32]) of
// at least 1. Missing or null is 0, and so rejected, as proto3 JSON reads
// them as the default value.
func parseWeight(raw json.RawMessage) (uint32, error) { return lb.ParseUint32(raw, 1) }

// validate checks what the balancer relies on, for a Config built by hand
// rather than parsed: every target has a weight of at least 1 and a policy.
func (c *Config) validate() error {
	for _, name := range slices.Sorted(maps.Keys(c.Targets)) {
		t := c.Targets[name]
		switch {
		case t.Weight == 0:
			return fmt.Errorf("weightedtarget: invalid config: target %q has weight 0", name)
		case t.ChildPolicy == nil || t.ChildPolicy.Builder == nil:
			return fmt.Errorf("weightedtarget: invalid config: target %q has no child policy", name)
		}
	}
	return nil
}
