package routing

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
)

// Name is the policy's name in loadBalancingConfig (gRFC A28's).
const Name = "xds_routing_experimental"

func init() { lb.Register(Builder{}) }

// Builder builds xds_routing_experimental balancers and parses their
// config. The zero Builder is ready to use. A Builder is immutable and safe
// for concurrent use. The package registers Builder{} under [Name] in its
// init function.
type Builder struct {
	// registry is what the clusters' child policy lists are parsed
	// against; nil means [lb.DefaultRegistry].
	registry *lb.Registry
}

// Name returns [Name].
func (Builder) Name() string { return Name }

// InRegistry returns a Builder that parses the clusters' child policy
// lists against r ([lb.ParentBuilder]).
func (Builder) InRegistry(r *lb.Registry) lb.Builder { return Builder{registry: r} }

// ParseConfig parses the policy's JSON config into a [*Config] and lists
// the fields it does not know ([lb.ConfigParser]); see [Config] for the
// format and the rules. Every error is an [*lb.ConfigError] whose path is
// relative to the policy's object, such as
// `routeConfig.virtualHosts[0].routes[1].match.safeRegex: invalid RE2 regex ...`.
func (b Builder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (*Config, error) {
		return readConfig(obj, b.registry)
	})
}

// Build returns a new routing balancer reporting to cc. Its children share
// opts. The balancer does nothing until its first UpdateClientConnState,
// which must carry a [*Config].
func (Builder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return newBalancer(cc, opts)
}
