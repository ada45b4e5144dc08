package unix

import (
	"fmt"

	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/resolver"
)

// The schemes this package resolves.
const (
	// Scheme is the scheme of file-system socket paths.
	Scheme = "unix"
	// AbstractScheme is the scheme of Linux abstract-namespace sockets.
	AbstractScheme = "unix-abstract"
)

// network is the value of networkKey on every address this package
// publishes.
const network = "unix"

var networkKey = attributes.NewKey[string]("lbkit/resolver/unix.network")

func init() {
	resolver.Register(Builder{})
	resolver.Register(Builder{Abstract: true})
}

// Network returns "unix" and true when addr was published by this package's
// resolvers and must be dialed with network "unix"; otherwise it returns ""
// and false.
func Network(addr resolver.Address) (string, bool) {
	return attributes.Get(addr.Attributes, networkKey)
}

// Builder builds unix resolvers. The zero value resolves [Scheme]; set
// Abstract for [AbstractScheme]. A Builder is immutable and safe for
// concurrent use.
type Builder struct {
	// Abstract selects the abstract namespace: Scheme returns
	// [AbstractScheme] and addresses are prefixed with "@".
	Abstract bool
}

// Register in init checks that Builder is a resolver.Builder.
var _ resolver.TargetValidator = Builder{}

// Scheme returns [Scheme], or [AbstractScheme] when b.Abstract is set.
func (b Builder) Scheme() string {
	if b.Abstract {
		return AbstractScheme
	}
	return Scheme
}

// ValidateTarget reports an error when target has an authority or an empty
// path.
func (b Builder) ValidateTarget(target resolver.Target) error {
	if target.Authority != "" {
		return fmt.Errorf("%s: authority %q is not supported; write %s:path or %s:///absolute/path", b.Scheme(), target.Authority, b.Scheme(), b.Scheme())
	}
	if target.Endpoint == "" {
		return fmt.Errorf("%s: empty socket path", b.Scheme())
	}
	return nil
}

// Build publishes the socket address of target once, before it returns. It
// fails when [Builder.ValidateTarget] does. An error from cc.UpdateState is
// logged to opts.Logger and not retried.
func (b Builder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	if err := b.ValidateTarget(target); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	addr := target.Endpoint
	if b.Abstract {
		addr = "@" + addr
	}
	a := resolver.Address{Addr: addr, Attributes: attributes.With(attributes.Attributes{}, networkKey, network)}
	if err := cc.UpdateState(resolver.State{Addresses: []resolver.Address{a}}); err != nil {
		opts.Logger.Warn(b.Scheme()+": channel rejected the address", "addr", addr, "error", err)
	}
	return nopResolver{}, nil
}

// nopResolver is a built unix resolver. The path never changes, so
// ResolveNow and Close do nothing.
type nopResolver struct{}

func (nopResolver) ResolveNow() {}
func (nopResolver) Close()      {}
