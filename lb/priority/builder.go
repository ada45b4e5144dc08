package priority

import (
	"encoding/json"
	"time"

	"github.com/lbkit/lbkit/internal/option"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
)

// Name is the policy's name in loadBalancingConfig.
const Name = "priority_experimental"

// The defaults of gRFC A56.
const (
	// DefaultFailoverTimeout is how long a child may stay CONNECTING
	// before the policy tries the next priority ("Child Connectivity
	// State Tracking").
	DefaultFailoverTimeout = 10 * time.Second
	// DefaultDeactivationDelay is how long a deactivated child lives
	// before it is destroyed ("Child Lifetime Management").
	DefaultDeactivationDelay = childmanager.DefaultDeactivationDelay
)

func init() { lb.Register(NewBuilder()) }

// Option configures a [Builder].
type Option interface{ apply(*options) }

type options struct {
	failoverTimeout   time.Duration
	deactivationDelay time.Duration
	retainRemoved     bool
	registry          *lb.Registry
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithFailoverTimeout sets the failover timer of every child. If this option
// is not supplied, or d is not positive, it is [DefaultFailoverTimeout]
// (10 s).
func WithFailoverTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d > 0 {
			o.failoverTimeout = d
		}
	})
}

// WithDeactivationDelay sets how long a deactivated child lives before it is
// destroyed. If this option is not supplied, or d is negative, it is
// [DefaultDeactivationDelay] (15 min).
func WithDeactivationDelay(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d >= 0 {
			o.deactivationDelay = d
		}
	})
}

// WithRetainRemovedChildren sets what happens to a child that a config
// update no longer names. With retain true, the child is deactivated under
// the deactivation delay, as gRFC A56 says, and a re-added child gets its
// new config and keeps its connections. With retain false, the child is
// destroyed at once, as gRFC A115 ("disable priority LB child policy
// retention cache") changed grpc-go and grpc-java to do: when child names
// churn, as xDS generates them, retained children are never reused and only
// hold memory and connections. Lower priorities deactivated because a
// higher one is usable keep the delay either way.
//
// If this option is not supplied, retain is true (gRFC A56).
func WithRetainRemovedChildren(retain bool) Option {
	return optionFunc(func(o *options) { o.retainRemoved = retain })
}

// Builder builds priority_experimental balancers and parses their config.
// The zero Builder is not usable; make one with [NewBuilder]. A Builder is
// immutable and safe for concurrent use.
type Builder struct {
	opts options
}

// NewBuilder returns a builder with the given options. The package registers
// NewBuilder() (every default) under [Name] in its init function; to use
// other options, register your own builder, which replaces it, or build
// with it directly.
func NewBuilder(opts ...Option) *Builder {
	o := options{
		failoverTimeout:   DefaultFailoverTimeout,
		deactivationDelay: DefaultDeactivationDelay,
		retainRemoved:     true,
		registry:          lb.DefaultRegistry(),
	}
	option.MustNotBeNil("priority.NewBuilder", opts)
	for _, opt := range opts {
		opt.apply(&o)
	}
	return &Builder{opts: o}
}

// Name returns [Name].
func (*Builder) Name() string { return Name }

// InRegistry returns a builder with b's options that parses the children's
// policy lists against r ([lb.ParentBuilder]). Until a registry binds it,
// a builder parses them against [lb.DefaultRegistry].
func (b *Builder) InRegistry(r *lb.Registry) lb.Builder {
	bound := *b
	bound.opts.registry = r
	return &bound
}

// ParseConfig parses the policy's JSON config into a [*Config] and lists
// the fields it does not know, its children's policies' included
// ([lb.ConfigParser]); see [Config] for the format and the rules. Every
// error is an [*lb.ConfigError] whose path is relative to the policy's
// object.
func (b *Builder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (*Config, error) {
		return readConfig(obj, b.opts.registry)
	})
}

// Build returns a new priority balancer reporting to cc. Its children share
// opts.
func (b *Builder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return newBalancer(cc, opts, b.opts)
}
