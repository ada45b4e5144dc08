package passthrough

import (
	"errors"

	"github.com/lbkit/lbkit/lb/resolver"
)

// Scheme is the scheme this package resolves.
const Scheme = "passthrough"

func init() { resolver.Register(Builder{}) }

// Builder builds passthrough resolvers. The zero value is ready to use; it
// holds no state and is safe for concurrent use.
type Builder struct{}

// Register in init checks that Builder is a resolver.Builder.
var _ resolver.TargetValidator = Builder{}

// Scheme returns [Scheme].
func (Builder) Scheme() string { return Scheme }

// ValidateTarget reports an error when target's endpoint is empty.
func (Builder) ValidateTarget(target resolver.Target) error {
	if target.Endpoint == "" {
		return errors.New("passthrough: empty endpoint; write passthrough:///host:port")
	}
	return nil
}

// Build publishes target.Endpoint as the only address, once, before it
// returns. It fails if the endpoint is empty. An error from
// cc.UpdateState is logged to opts.Logger and not retried.
func (b Builder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	if err := b.ValidateTarget(target); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	st := resolver.State{Addresses: []resolver.Address{{Addr: target.Endpoint}}}
	if err := cc.UpdateState(st); err != nil {
		opts.Logger.Warn("passthrough: channel rejected the address", "addr", target.Endpoint, "error", err)
	}
	return nopResolver{}, nil
}

// nopResolver is a built passthrough resolver. It has nothing to watch, so
// ResolveNow and Close do nothing.
type nopResolver struct{}

func (nopResolver) ResolveNow() {}
func (nopResolver) Close()      {}
