package static

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"unicode"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// Scheme is the scheme this package resolves.
const Scheme = "static"

func init() { resolver.Register(Builder{}) }

// Builder builds static resolvers. The zero value is ready to use; it holds
// no state and is safe for concurrent use.
type Builder struct{}

// Register in init checks that Builder is a resolver.Builder.
var _ resolver.TargetValidator = Builder{}

// Scheme returns [Scheme].
func (Builder) Scheme() string { return Scheme }

// ValidateTarget reports the first malformed element of target's endpoint,
// or a non-empty authority.
func (Builder) ValidateTarget(target resolver.Target) error {
	_, err := ParseAddresses(target)
	return err
}

// Build publishes the addresses of target, once, before it returns. It fails
// when [ParseAddresses] does. An error from cc.UpdateState is logged to
// opts.Logger and not retried.
func (Builder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	addrs, err := ParseAddresses(target)
	if err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	if err := cc.UpdateState(resolver.State{Addresses: addrs}); err != nil {
		opts.Logger.Warn("static: channel rejected the addresses", "error", err)
	}
	return nopResolver{}, nil
}

// ParseAddresses returns the addresses a static target lists, in order, as
// described in the package documentation. The error names the first bad
// element and its index.
func ParseAddresses(target resolver.Target) ([]resolver.Address, error) {
	if target.Authority != "" {
		return nil, fmt.Errorf("static: authority %q is not supported; write static:///host:port,host:port", target.Authority)
	}
	if target.Endpoint == "" {
		return nil, errors.New("static: empty address list; write static:///host:port,host:port")
	}
	elems := strings.Split(target.Endpoint, ",")
	addrs := make([]resolver.Address, 0, len(elems))
	for i, e := range elems {
		a, err := parseWeighted(e)
		if err != nil {
			return nil, fmt.Errorf("static: element %d %q: %w", i, e, err)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// parseWeighted parses one element, host:port or host:port=weight.
func parseWeighted(e string) (resolver.Address, error) {
	hostPort, w, weighted := strings.Cut(e, "=")
	addr, err := parseElement(hostPort)
	if err != nil {
		return resolver.Address{}, err
	}
	a := resolver.Address{Addr: addr}
	if !weighted {
		return a, nil
	}
	n, err := strconv.ParseUint(w, 10, 32)
	if err != nil || n == 0 {
		return resolver.Address{}, fmt.Errorf("invalid weight %q: want a whole number from 1 to %d", w, uint32(1<<32-1))
	}
	return weight.Set(a, uint32(n)), nil
}

// parseElement checks one host:port element and returns it in canonical
// form.
func parseElement(e string) (string, error) {
	if e == "" {
		return "", errors.New("empty address")
	}
	host, port, err := net.SplitHostPort(e)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return "", errors.New(ae.Err) // the element is already named
		}
		return "", err
	}
	if host == "" {
		return "", errors.New("empty host")
	}
	if i := strings.IndexFunc(host, unicode.IsSpace); i >= 0 {
		return "", fmt.Errorf("host %q contains white space", host)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return "", fmt.Errorf("invalid port %q: want a number from 1 to 65535", port)
	}
	return net.JoinHostPort(host, strconv.FormatUint(n, 10)), nil
}

// nopResolver is a built static resolver. Its list never changes, so
// ResolveNow and Close do nothing.
type nopResolver struct{}

func (nopResolver) ResolveNow() {}
func (nopResolver) Close()      {}
