package outlierdetection

import (
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
)

// Name is the policy's name in loadBalancingConfig.
const Name = "outlier_detection_experimental"

func init() { lb.Register(Builder{}) }

// Builder builds outlier_detection_experimental balancers and parses their
// config, a [*Config], parsing the child policy list against the registry
// it is registered in ([childmanager.Builder]); the fields it does not
// know include its child policy's. See [Config] for the format, the
// defaults and the rules; every parse error is an [*lb.ConfigError] whose
// path is relative to the policy's object, such as
// `failurePercentageEjection.threshold: must be <= 100, got 101`. A
// balancer's child shares its [lb.BuildOptions]: the sweep timer runs on
// their Scheduler and enforcement draws use their Rand. It does nothing
// until its first UpdateClientConnState, which must carry a [*Config].
//
// The zero Builder is ready to use. A Builder is immutable and safe for
// concurrent use. The package registers Builder{} under [Name] in its init
// function.
type Builder = childmanager.Builder[policy]

// policy is outlier_detection_experimental for [childmanager.Builder]: its
// ReadConfig is in config.go, its Build in balancer.go.
type policy struct{}

// Name returns [Name].
func (policy) Name() string { return Name }
