package priority

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
)

// Policy is priority_experimental's config written in Go, an
// [lb.PolicyConfig]: it stands for the JSON object [Config] documents and
// is parsed by the same parser, so it is accepted and rejected as that
// JSON is, with the same error paths (a priority naming no child is
// "priorities[2]: ..."). Nil Children and Priorities are left out (empty).
//
//	priority.Policy{
//		Children: map[string]priority.ChildPolicy{
//			"p0": {Config: roundrobin.Config{}},
//			"p1": {Config: pickfirst.Config{}},
//		},
//		Priorities: []string{"p0", "p1"},
//	}
//
// A Policy is a value: nothing that takes one changes it.
type Policy struct {
	// Children maps a child's name to its config ("children").
	Children map[string]ChildPolicy
	// Priorities lists the children's names, highest priority first
	// ("priorities").
	Priorities []string
}

// ChildPolicy is one child of a [Policy].
type ChildPolicy struct {
	// Config is the child's policy ("config", a list of this one
	// policy); nil is left out, which the parser rejects.
	Config lb.PolicyConfig
	// IgnoreReresolutionRequests drops the child's re-resolution requests
	// ("ignoreReresolutionRequests").
	IgnoreReresolutionRequests bool
}

var _ lb.PolicyConfig = Policy{}

// PolicyName returns [Name].
func (Policy) PolicyName() string { return Name }

// MarshalJSON returns the JSON object p stands for.
func (p Policy) MarshalJSON() ([]byte, error) {
	type child struct {
		Config                     json.RawMessage `json:"config,omitempty"`
		IgnoreReresolutionRequests bool            `json:"ignoreReresolutionRequests,omitempty"`
	}
	var children map[string]child
	if p.Children != nil {
		children = make(map[string]child, len(p.Children))
	}
	for name, c := range p.Children {
		cfg, err := lb.ChildPolicyJSON(c.Config)
		if err != nil {
			return nil, lb.PrefixConfigError(lb.JoinPath("children", lb.KeyPath(name)), err)
		}
		children[name] = child{cfg, c.IgnoreReresolutionRequests}
	}
	return json.Marshal(struct {
		Children   map[string]child `json:"children,omitempty"`
		Priorities []string         `json:"priorities,omitempty"`
	}{children, p.Priorities})
}
