package routing

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/route"
)

// Policy is xds_routing_experimental's config written in Go, an
// [lb.PolicyConfig]: it stands for the JSON object [Config] documents and
// is parsed by the same parser, so it is accepted and rejected as that
// JSON is, with the same error paths.
//
//	routing.Policy{
//		Routes: route.Config{VirtualHosts: []route.VirtualHost{{Domains: []string{"*"}, Routes: ...}}},
//		Clusters: map[string]lb.PolicyConfig{"stable": roundrobin.Config{}, "canary": roundrobin.Config{}},
//	}
//
// A Policy is a value: nothing that takes one changes it.
type Policy struct {
	// Routes is the route configuration ("routeConfig").
	Routes route.Config
	// Clusters maps each cluster to its policy ("clusters", each a
	// "childPolicy" list of this one policy); a nil policy is left out,
	// which the parser rejects.
	Clusters map[string]lb.PolicyConfig
}

var _ lb.PolicyConfig = Policy{}

// PolicyName returns [Name].
func (Policy) PolicyName() string { return Name }

// MarshalJSON returns the JSON object p stands for.
func (p Policy) MarshalJSON() ([]byte, error) {
	type cluster struct {
		ChildPolicy json.RawMessage `json:"childPolicy,omitempty"`
	}
	clusters := make(map[string]cluster, len(p.Clusters))
	for name, c := range p.Clusters {
		child, err := lb.ChildPolicyJSON(c)
		if err != nil {
			return nil, lb.PrefixConfigError(lb.JoinPath("clusters", lb.KeyPath(name)), err)
		}
		clusters[name] = cluster{child}
	}
	return json.Marshal(struct {
		Routes   route.Config       `json:"routeConfig"`
		Clusters map[string]cluster `json:"clusters"`
	}{p.Routes, clusters})
}
