package grpcgo

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/lbkit/lbkit/lb"
)

// ServiceConfig returns the grpc-go service config whose policy is p, a
// typed lbkit config ([lb.PolicyConfig]), for grpc.WithDefaultServiceConfig
// or a resolver's service config: {"loadBalancingConfig":
// [{"lbkit_<policy>": <p's JSON>}]}. The top-level entry names the lbkit
// policy by the name this package registers it under; nested child
// policies keep lbkit's names, as the adapter's configs want. grpc-go then
// parses it with the policy's own parser, so p is accepted and rejected as
// its JSON is. A nil p, a p that does not marshal, or a policy this
// package does not register is an error.
func ServiceConfig(p lb.PolicyConfig) (string, error) {
	list, err := lb.MarshalPolicyList(p) // checks p and that it marshals to an object
	if err != nil {
		return "", fmt.Errorf("grpcgo.ServiceConfig: %w", err)
	}
	i := slices.IndexFunc(defaultPolicies, func(d defaultPolicy) bool { return d.b.Name() == p.PolicyName() })
	if i < 0 {
		return "", fmt.Errorf("grpcgo.ServiceConfig: no default grpc-go name for policy %q: register it (Register) and write its service config as JSON", p.PolicyName())
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(list, &entries); err != nil {
		return "", fmt.Errorf("grpcgo.ServiceConfig: %w", err)
	}
	key, _ := json.Marshal(defaultPolicies[i].name) // a string always marshals
	return `{"loadBalancingConfig":[{` + string(key) + `:` + string(entries[0][p.PolicyName()]) + `}]}`, nil
}
