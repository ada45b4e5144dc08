package clusterimpl

import (
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
)

func init() { lb.Register(Builder{}) }

// Builder builds xds_cluster_impl_experimental balancers and parses their
// config, a [*Config], parsing the child policy list against the registry
// it is registered in ([childmanager.Builder]). Every parse error is an
// [*lb.ConfigError] whose path is relative to the policy's object, such as
// `dropCategories[1].requestsPerMillion: must be <= 1000000, got 1000001`.
// A balancer's child shares its [lb.BuildOptions], and its pickers' drop
// draws are seeded from the options' Rand; it does nothing until its first
// UpdateClientConnState, which must carry a [*Config].
//
// The zero Builder is ready to use; it is immutable and safe for
// concurrent use. The package registers Builder{} under [Name] in its init
// function.
type Builder = childmanager.Builder[policy]

// policy is xds_cluster_impl_experimental for [childmanager.Builder]: its
// ReadConfig is in config.go, its Build in balancer.go.
type policy struct{}

// Name returns [Name].
func (policy) Name() string { return Name }
