package weightedtarget

import (
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
)

// Name is the policy's name in loadBalancingConfig.
const Name = "weighted_target_experimental"

func init() { lb.Register(Builder{}) }

// Builder builds weighted_target_experimental balancers and parses their
// config, a [*Config], parsing the targets' child policy lists against the
// registry it is registered in ([childmanager.Builder]); the fields it
// does not know include its targets' policies'. Every parse error is an
// [*lb.ConfigError] whose path is relative to the policy's object, such as
// `targets["a"].weight: must be >= 1, got 0`. A balancer's children share
// its [lb.BuildOptions]; it does nothing until its first
// UpdateClientConnState, which must carry a [*Config].
//
// The zero Builder is ready to use. A Builder is immutable and safe for
// concurrent use. The package registers Builder{} under [Name] in its init
// function.
type Builder = childmanager.Builder[policy]

// policy is weighted_target_experimental for [childmanager.Builder]: its
// ReadConfig is in config.go, its Build in balancer.go.
type policy struct{}

// Name returns [Name].
func (policy) Name() string { return Name }
