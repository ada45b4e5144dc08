package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/lbkit/lbkit/internal/option"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Scheme is the scheme this package resolves.
const Scheme = "dns"

// Defaults of the [Builder] options.
const (
	// DefaultPort is the port of a target that names none.
	DefaultPort = 443
	// DefaultMinResolutionInterval is the floor: the least time between the
	// starts of two resolutions, whether ResolveNow or the poll interval
	// triggers the second.
	DefaultMinResolutionInterval = 30 * time.Second
	// DefaultPollInterval is the time from the start of one successful
	// resolution to the start of the next when nothing asks sooner: the
	// floor, so that a default resolver asks its DNS server at most once
	// per 30 s whatever triggers the lookups, and a new backend published
	// in DNS takes traffic within 30 s plus one connection attempt.
	DefaultPollInterval = 30 * time.Second
	// DefaultLookupTimeout bounds each lookup.
	DefaultLookupTimeout = 30 * time.Second
)

// defaultServerPort is the port of a DNS server named by an authority
// without one.
const defaultServerPort = "53"

func init() { resolver.Register(&Builder{}) }

// LookupFunc returns the IP addresses of host. It must return when ctx is
// done. The addresses are published in the order returned; IPv4-mapped IPv6
// addresses are unmapped.
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// config is what the options set. It is read-only once NewBuilder returns.
type config struct {
	port          string
	minInterval   time.Duration
	pollInterval  time.Duration
	lookupTimeout time.Duration
	backoff       backoff.Config
	lookup        LookupFunc
}

// Option configures a [Builder]. An out-of-range value makes [NewBuilder]
// return an error naming the option.
type Option interface{ apply(*config) error }

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// WithDefaultPort sets the port of a target that names none. The default is
// [DefaultPort], 443. port must not be 0.
func WithDefaultPort(port uint16) Option {
	return optionFunc(func(c *config) error {
		if port == 0 {
			return errors.New("WithDefaultPort(0): not a port, want 1 to 65535")
		}
		c.port = strconv.Itoa(int(port))
		return nil
	})
}

// WithMinResolutionInterval sets the floor: the least time between the
// starts of two resolutions after a success, whether ResolveNow (a READY
// connection lost) or the poll interval triggers the second. The default is
// [DefaultMinResolutionInterval], 30 s; 0 means no rate limit. d must not be
// negative, nor above the poll interval.
func WithMinResolutionInterval(d time.Duration) Option {
	return nonNegative("WithMinResolutionInterval", d, func(c *config) { c.minInterval = d })
}

// WithPollInterval sets how long after the start of a successful
// resolution the next one starts when nothing asks sooner, so that
// addresses added to or removed from DNS are seen without a lost
// connection. The default is [DefaultPollInterval], 30 s. d must be
// positive and at least the floor ([WithMinResolutionInterval]); whichever
// order the two options come in, [NewBuilder] refuses a poll interval
// below the floor, naming both.
func WithPollInterval(d time.Duration) Option {
	return durationOption("WithPollInterval", d, d > 0, "not positive", func(c *config) { c.pollInterval = d })
}

// WithLookupTimeout bounds each lookup, on the resolver's clock. The
// default is [DefaultLookupTimeout], 30 s; 0 means no bound (the lookup
// still ends on Close). d must not be negative.
func WithLookupTimeout(d time.Duration) Option {
	return nonNegative("WithLookupTimeout", d, func(c *config) { c.lookupTimeout = d })
}

// nonNegative is the option named name that refuses a negative d and
// otherwise calls set.
func nonNegative(name string, d time.Duration, set func(*config)) Option {
	return durationOption(name, d, d >= 0, "negative", set)
}

// durationOption is the option named name that calls set when ok, and
// otherwise refuses d for reason.
func durationOption(name string, d time.Duration, ok bool, reason string, set func(*config)) Option {
	return optionFunc(func(c *config) error {
		if !ok {
			return fmt.Errorf("%s(%v): %s", name, d, reason)
		}
		set(c)
		return nil
	})
}

// WithBackoff sets the retry schedule after failed resolutions; its jitter
// comes from resolver.BuildOptions.Rand. The default is [backoff.Default],
// gRPC's connection backoff: 1 s, ×1.6, ±20 %, at most 120 s. b must satisfy
// the rules on [backoff.Config]'s fields.
func WithBackoff(b backoff.Config) Option {
	return optionFunc(func(c *config) error {
		if err := b.Validate("WithBackoff"); err != nil {
			return err
		}
		c.backoff = b
		return nil
	})
}

// WithLookup replaces the lookup of host names, for tests and for users with
// their own discovery. The target's authority is then ignored. The default,
// or nil, is [net.Resolver.LookupNetIP] with network "ip" on
// [net.DefaultResolver], or on a resolver that asks the DNS server the
// authority names.
func WithLookup(f LookupFunc) Option {
	return optionFunc(func(c *config) error {
		c.lookup = f
		return nil
	})
}

// Builder builds dns resolvers. Create it with [NewBuilder]; the zero value
// behaves as NewBuilder(). A Builder is immutable and safe for concurrent
// use.
type Builder struct {
	cfg config // port == "" only in the zero value
}

// config returns b's settings, the defaults for the zero Builder.
func (b *Builder) config() config {
	if b.cfg.port == "" {
		return defaultConfig()
	}
	return b.cfg
}

func defaultConfig() config {
	return config{
		port:          strconv.Itoa(DefaultPort),
		minInterval:   DefaultMinResolutionInterval,
		pollInterval:  DefaultPollInterval,
		lookupTimeout: DefaultLookupTimeout,
		backoff:       backoff.Default(),
	}
}

// Register in init checks that Builder is a resolver.Builder.
var _ resolver.TargetValidator = (*Builder)(nil)

// NewBuilder returns a builder with the given options applied in order, or
// an error naming the first option whose value is out of range.
func NewBuilder(opts ...Option) (*Builder, error) {
	cfg := defaultConfig()
	if err := option.Apply(&cfg, opts, Option.apply); err != nil {
		return nil, fmt.Errorf("dns: NewBuilder: %w", err)
	}
	if cfg.pollInterval < cfg.minInterval {
		return nil, fmt.Errorf("dns: NewBuilder: WithPollInterval(%v): below the floor WithMinResolutionInterval(%v); lower the floor or poll less often",
			cfg.pollInterval, cfg.minInterval)
	}
	return &Builder{cfg: cfg}, nil
}

// Scheme returns [Scheme].
func (b *Builder) Scheme() string { return Scheme }

// ValidateTarget checks target's endpoint (host[:port]) and authority
// (DNS server host[:port]) as the package documentation describes.
func (b *Builder) ValidateTarget(target resolver.Target) error {
	_, _, _, err := b.parse(target)
	return err
}

// parse returns the host and port to resolve and the DNS server to ask
// ("" for the system's).
func (b *Builder) parse(target resolver.Target) (host, port, server string, err error) {
	host, port, err = splitHostPort(target.Endpoint, b.config().port)
	if err != nil {
		return "", "", "", fmt.Errorf("dns: endpoint %q: %w", target.Endpoint, err)
	}
	if target.Authority != "" {
		h, p, err := splitHostPort(target.Authority, defaultServerPort)
		if err != nil {
			return "", "", "", fmt.Errorf("dns: authority (DNS server) %q: %w", target.Authority, err)
		}
		server = net.JoinHostPort(h, p)
	}
	return host, port, server, nil
}

// splitHostPort splits "host[:port]", using defaultPort when there is no
// port. The port is returned in canonical decimal form.
func splitHostPort(s, defaultPort string) (host, port string, err error) {
	if s == "" {
		return "", "", errors.New("empty; want host[:port]")
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return s, defaultPort, nil // a bare IP literal, IPv6 included
	}
	host, port, err = net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if !errors.As(err, &ae) || ae.Err != "missing port in address" {
			return "", "", errors.New(strings.TrimSuffix(addrErrText(err), " in address"))
		}
		// No port: s is a host, possibly a bracketed IPv6 literal.
		host, port, err = net.SplitHostPort(s + ":" + defaultPort)
		if err != nil {
			return "", "", errors.New(strings.TrimSuffix(addrErrText(err), " in address"))
		}
	} else {
		if port == "" {
			return "", "", errors.New("missing port after ':'")
		}
		n, perr := strconv.ParseUint(port, 10, 16)
		if perr != nil || n == 0 {
			return "", "", fmt.Errorf("invalid port %q: want a number from 1 to 65535", port)
		}
		port = strconv.FormatUint(n, 10)
	}
	if host == "" {
		host = "localhost"
	}
	if strings.ContainsFunc(host, unicode.IsSpace) {
		return "", "", fmt.Errorf("host %q contains white space", host)
	}
	return host, port, nil
}

// addrErrText returns the reason of a *net.AddrError without the address,
// which the caller names already.
func addrErrText(err error) string {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return ae.Err
	}
	return err.Error()
}

// Build starts resolving target and reports to cc. It fails when
// [Builder.ValidateTarget] does. An IP literal is published once before
// Build returns; a host name is resolved on a goroutine that Close stops.
func (b *Builder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	host, port, server, err := b.parse(target)
	if err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	logger := opts.Logger.With("resolver", Scheme) // the channel's logger names the target
	if ip, err := netip.ParseAddr(host); err == nil {
		addr := net.JoinHostPort(ip.Unmap().String(), port)
		if err := cc.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: addr}}}); err != nil {
			logger.Warn("dns: channel rejected the IP literal", "addr", addr, "error", err)
		}
		return nopResolver{}, nil
	}
	cfg := b.config()
	lookup := cfg.lookup
	if lookup == nil {
		r := net.DefaultResolver
		if server != "" {
			r = serverResolver(server)
		}
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return r.LookupNetIP(ctx, "ip", host)
		}
	}
	return start(resolverConfig{
		host:   host,
		port:   port,
		server: server,
		cfg:    cfg,
		lookup: lookup,
		cc:     cc,
		clock:  opts.Clock,
		logger: logger,
		rand:   opts.Rand,
	}), nil
}

// serverResolver returns a pure-Go resolver that sends every query to
// server, whatever its configuration names. Each connection is closed when
// the context of its exchange ends, so the lookup timeout (on the
// resolver's clock) and Close end a lookup at once, even against a server
// that never answers: Go's resolver itself only reads until its own
// deadline, on the real clock.
func serverResolver(server string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, server)
			if err != nil {
				return nil, err
			}
			context.AfterFunc(ctx, func() { c.Close() })
			return c, nil
		},
	}
}

// nopResolver is the resolver of an IP literal, which never changes.
type nopResolver struct{}

func (nopResolver) ResolveNow() {}
func (nopResolver) Close()      {}
