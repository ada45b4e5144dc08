package weightedtarget

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
)

// Name is the policy's name in loadBalancingConfig.
const Name = "weighted_target_experimental"

func init() { lb.Register(Builder{}) }

// Builder builds weighted_target_experimental balancers and parses their
// config. The zero Builder is ready to use. A Builder is immutable and safe
// for concurrent use. The package registers Builder{} under [Name] in its
// init function.
type Builder struct {
	// registry is what the targets' child policy lists are parsed
	// against; nil means [lb.DefaultRegistry]. A registry sets it
	// ([Builder.InRegistry]).
	registry *lb.Registry
}

// Name returns [Name].
func (Builder) Name() string { return Name }

// InRegistry returns a Builder that parses the targets' child policy lists
// against r ([lb.ParentBuilder]).
func (Builder) InRegistry(r *lb.Registry) lb.Builder { return Builder{registry: r} }

// ParseConfig parses the policy's JSON config into a [*Config] and lists
// the fields it does not know, its targets' policies' included
// ([lb.ConfigParser]); see [Config] for the format and the rules. Every
// error is an [*lb.ConfigError] whose path is relative to the policy's
// object, such as `targets["a"].weight: must be >= 1, got 0`.
func (b Builder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (*Config, error) {
		return readConfig(obj, b.registry)
	})
}

// Build returns a new weighted_target balancer reporting to cc. Its children
// share opts. The balancer does nothing until its first
// UpdateClientConnState, which must carry a [*Config].
func (Builder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return newBalancer(cc, opts)
}
