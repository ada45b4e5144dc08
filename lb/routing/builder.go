package routing

import (
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
)

// Name is the policy's name in loadBalancingConfig (gRFC A28's).
const Name = "xds_routing_experimental"

func init() { lb.Register(Builder{}) }

// Builder builds xds_routing_experimental balancers and parses their
// config, a [*Config], parsing the clusters' child policy lists against
// the registry it is registered in ([childmanager.Builder]). Every parse
// error is an [*lb.ConfigError] whose path is relative to the policy's
// object, such as
// `routeConfig.virtualHosts[0].routes[1].match.safeRegex: invalid RE2 regex ...`.
// A balancer's children share its [lb.BuildOptions]; it does nothing until
// its first UpdateClientConnState, which must carry a [*Config].
//
// The zero Builder is ready to use. A Builder is immutable and safe for
// concurrent use. The package registers Builder{} under [Name] in its init
// function.
type Builder = childmanager.Builder[policy]

// policy is xds_routing_experimental for [childmanager.Builder]: its
// ReadConfig is in config.go, its Build in balancer.go.
type policy struct{}

// Name returns [Name].
func (policy) Name() string { return Name }
