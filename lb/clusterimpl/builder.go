package clusterimpl

import "github.com/lbkit/lbkit/lb"

func init() { lb.Register(Builder{}) }

// Builder builds xds_cluster_impl_experimental balancers and parses their
// config. The zero Builder is ready to use; it is immutable and safe for
// concurrent use. The package registers Builder{} under [Name] in its init
// function.
type Builder struct {
	// registry is what the child policy list is parsed against; nil means
	// [lb.DefaultRegistry]. A registry sets it ([Builder.InRegistry]).
	registry *lb.Registry
}

// Name returns [Name].
func (Builder) Name() string { return Name }

// InRegistry returns a Builder that parses the child policy list against r
// ([lb.ParentBuilder]).
func (Builder) InRegistry(r *lb.Registry) lb.Builder { return Builder{registry: r} }

// Build returns a new balancer reporting to cc; its child shares opts, and
// its pickers' drop draws are seeded from opts.Rand. It does nothing until
// its first UpdateClientConnState, which must carry a [*Config].
func (Builder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return newBalancer(cc, opts)
}
