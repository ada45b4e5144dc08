package weightedtarget

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
)

// Policy is weighted_target_experimental's config written in Go, an
// [lb.PolicyConfig]: it stands for the JSON object [Config] documents and
// is parsed by the same parser, so it is accepted and rejected as that
// JSON is, with the same error paths (a zero weight is
// `targets["a"].weight: must be >= 1, got 0`). Nil Targets is left out
// (no target).
//
//	weightedtarget.Policy{Targets: map[string]weightedtarget.TargetPolicy{
//		"localityA": {Weight: 1, ChildPolicy: roundrobin.Config{}},
//		"localityB": {Weight: 3, ChildPolicy: roundrobin.Config{}},
//	}}
//
// A Policy is a value: nothing that takes one changes it.
type Policy struct {
	// Targets maps a target's name to its config ("targets").
	Targets map[string]TargetPolicy
}

// TargetPolicy is one target of a [Policy].
type TargetPolicy struct {
	// Weight is the target's weight ("weight"); 0 is written as 0, which
	// the parser rejects.
	Weight uint32
	// ChildPolicy is the target's policy ("childPolicy", a list of this
	// one policy); nil is left out, which the parser rejects.
	ChildPolicy lb.PolicyConfig
}

var _ lb.PolicyConfig = Policy{}

// PolicyName returns [Name].
func (Policy) PolicyName() string { return Name }

// MarshalJSON returns the JSON object p stands for.
func (p Policy) MarshalJSON() ([]byte, error) {
	type target struct {
		Weight      uint32          `json:"weight"`
		ChildPolicy json.RawMessage `json:"childPolicy,omitempty"`
	}
	var targets map[string]target
	if p.Targets != nil {
		targets = make(map[string]target, len(p.Targets))
	}
	for name, t := range p.Targets {
		child, err := lb.ChildPolicyJSON(t.ChildPolicy)
		if err != nil {
			return nil, lb.PrefixConfigError(lb.JoinPath("targets", lb.KeyPath(name)), err)
		}
		targets[name] = target{t.Weight, child}
	}
	return json.Marshal(struct {
		Targets map[string]target `json:"targets,omitempty"`
	}{targets})
}
