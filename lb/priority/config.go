package priority

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/lbkit/lbkit/lb"
)

// Config is the parsed config of a priority_experimental balancer, gRFC
// A56's PriorityLoadBalancingPolicyConfig:
//
//	{
//	  "children": {
//	    "p0": {"config": [{"round_robin": {}}], "ignoreReresolutionRequests": false},
//	    "p1": {"config": [{"pick_first": {}}]}
//	  },
//	  "priorities": ["p0", "p1"]
//	}
//
// Field names are case-sensitive; "ignore_reresolution_requests" is accepted
// for "ignoreReresolutionRequests", as proto3 JSON allows. Unknown fields
// are ignored. A missing "children" or "priorities" is empty. The parser
// rejects, naming the JSON path:
//
//   - a child whose "config" is missing, empty or names no registered
//     policy, or whose first registered policy's config is invalid
//     (children["p1"].config: empty policy list);
//   - a priority naming no child (priorities[2]);
//   - a name listed twice in priorities (priorities[3]);
//   - a child that priorities does not list (children["p5"]).
//
// The last rule is grpc-go's; C-core ignores such a child. lbkit rejects it
// because a child outside priorities can never be chosen: it is a mistake of
// whatever generated the config, and if the child already exists, C-core
// keeps updating it without ever using or deactivating it.
//
// A Config is immutable once parsed; balancers never change it.
type Config struct {
	// Children maps a child's name to its config.
	Children map[string]ChildConfig
	// Priorities lists the children's names, highest priority first.
	Priorities []string
}

// ChildConfig is the config of one child.
type ChildConfig struct {
	// Policy is the child's policy, the first registered entry of its
	// "config" list.
	Policy *lb.ParsedPolicy
	// IgnoreReresolutionRequests drops the child's ResolveNow calls
	// instead of passing them to the parent (gRFC A37).
	IgnoreReresolutionRequests bool
}

// readConfig reads the policy's config from obj; child policy lists are
// parsed against reg (nil: [lb.DefaultRegistry]).
func readConfig(obj lb.ConfigObject, reg *lb.Registry) (*Config, error) {
	var children map[string]json.RawMessage
	if err := obj.Decode(&children, "children"); err != nil {
		return nil, err
	}
	var priorities []string
	if err := obj.Decode(&priorities, "priorities"); err != nil {
		return nil, err
	}

	cfg := &Config{Children: make(map[string]ChildConfig, len(children)), Priorities: priorities}
	names := slices.Sorted(maps.Keys(children)) // errors in a stable order
	for _, name := range names {
		at := lb.JoinPath("children", lb.KeyPath(name))
		child, err := obj.ObjectAt(at, children[name])
		if err != nil {
			return nil, err
		}
		if cfg.Children[name], err = readChild(child, reg); err != nil {
			return nil, lb.PrefixConfigError(at, err)
		}
	}

	listed := make(map[string]int, len(priorities))
	for i, name := range priorities {
		at := "priorities[" + strconv.Itoa(i) + "]"
		if _, ok := cfg.Children[name]; !ok {
			return nil, lb.ConfigErrorf(at, "%q names no child in children", name)
		}
		if first, dup := listed[name]; dup {
			return nil, lb.ConfigErrorf(at, "%q is listed twice (first at priorities[%d])", name, first)
		}
		listed[name] = i
	}
	for _, name := range names {
		if _, ok := listed[name]; !ok {
			return nil, lb.ConfigErrorf(lb.JoinPath("children", lb.KeyPath(name)), "child is not listed in priorities")
		}
	}
	return cfg, nil
}

// validate checks what the balancer relies on, for a Config built by hand
// rather than parsed: every priority names a child with a policy, once.
func (c *Config) validate() error {
	seen := make(map[string]bool, len(c.Priorities))
	for i, name := range c.Priorities {
		child, ok := c.Children[name]
		switch {
		case !ok:
			return fmt.Errorf("priority: invalid config: priorities[%d] %q names no child", i, name)
		case seen[name]:
			return fmt.Errorf("priority: invalid config: %q is listed twice in priorities", name)
		case child.Policy == nil || child.Policy.Builder == nil:
			return fmt.Errorf("priority: invalid config: child %q has no policy", name)
		}
		seen[name] = true
	}
	return nil
}

// readChild reads one child's object; error paths are relative to it.
func readChild(obj lb.ConfigObject, reg *lb.Registry) (ChildConfig, error) {
	var c ChildConfig
	if err := obj.Decode(&c.IgnoreReresolutionRequests, "ignoreReresolutionRequests", "ignore_reresolution_requests"); err != nil {
		return ChildConfig{}, err
	}
	p, err := obj.PolicyList(reg, "config")
	if err != nil {
		return ChildConfig{}, err
	}
	c.Policy = p
	return c, nil
}
