package xds

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/resolver"
	"google.golang.org/grpc"
)

// Scheme is the scheme this package resolves: "xds:///CLUSTER".
const Scheme = "xds"

func init() { resolver.Register(&Builder{}) }

// builderConfig is what a Builder's options set.
type builderConfig struct {
	bootstrap       *Bootstrap
	resourceTimeout time.Duration
	backoff         backoff.Config
	dialOptions     []grpc.DialOption
}

func defaultConfig() builderConfig {
	return builderConfig{resourceTimeout: DefaultResourceTimeout, backoff: backoff.Default()}
}

// Option configures a [Builder].
type Option interface{ apply(*builderConfig) error }

type optionFunc func(*builderConfig) error

func (f optionFunc) apply(c *builderConfig) error { return f(c) }

// WithBootstrap uses b instead of the bootstrap the environment names
// ([LoadBootstrap]). b must have at least one server.
func WithBootstrap(b *Bootstrap) Option {
	return optionFunc(func(c *builderConfig) error {
		if b == nil || len(b.Servers) == 0 {
			return errors.New("xds: WithBootstrap: the bootstrap has no server")
		}
		c.bootstrap = b
		return nil
	})
}

// WithResourceTimeout sets how long a subscribed resource may go unsent on
// a live stream before it counts as not existing; the default is
// [DefaultResourceTimeout].
func WithResourceTimeout(d time.Duration) Option {
	return optionFunc(func(c *builderConfig) error {
		if d <= 0 {
			return fmt.Errorf("xds: WithResourceTimeout: must be positive, got %v", d)
		}
		c.resourceTimeout = d
		return nil
	})
}

// WithBackoff sets the reconnection backoff of the ADS stream; the default
// is gRPC's ([backoff.Default]).
func WithBackoff(b backoff.Config) Option {
	return optionFunc(func(c *builderConfig) error {
		if err := b.Validate("xds: WithBackoff"); err != nil {
			return err
		}
		c.backoff = b
		return nil
	})
}

// WithDialOptions adds grpc.DialOptions to the connection to the
// management server, after the bootstrap's credentials.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return optionFunc(func(c *builderConfig) error {
		c.dialOptions = append(c.dialOptions, opts...)
		return nil
	})
}

// Builder builds "xds" resolvers. Every resolver a Builder builds for the
// same management server and clock shares one ADS stream: one client per
// server, opened by the first resolver and closed with the last.
//
// The zero Builder, which importing this package registers, reads its
// bootstrap from the environment ([LoadBootstrap]) when it builds its first
// resolver and uses the defaults of every option. Use [NewBuilder] and
// conn.WithResolver (or resolver.Register) for other settings.
//
// A Builder is safe for concurrent use.
type Builder struct {
	cfg     *builderConfig // nil: the defaults, bootstrap from the environment
	mu      sync.Mutex
	clients map[poolKey]*pooled
}

// poolKey says which resolvers share a client: the same server, timed by
// the same clock.
type poolKey struct {
	uri   string
	clock clock.Clock
}

type pooled struct {
	c    *client
	refs int
}

// NewBuilder returns a Builder with opts applied.
func NewBuilder(opts ...Option) (*Builder, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o.apply(&cfg); err != nil {
			return nil, err
		}
	}
	return &Builder{cfg: &cfg}, nil
}

// Scheme returns "xds".
func (b *Builder) Scheme() string { return Scheme }

// clusterName returns the cluster a target names.
func clusterName(t resolver.Target) (string, error) {
	if t.Authority != "" {
		return "", fmt.Errorf("xds: target %q: an authority (%q) is not supported; use xds:///CLUSTER", t.String(), t.Authority)
	}
	name := strings.TrimPrefix(t.Endpoint, "/")
	if name == "" {
		return "", fmt.Errorf("xds: target %q names no cluster; use xds:///CLUSTER", t.String())
	}
	return name, nil
}

// Build subscribes to the cluster the target names ("xds:///CLUSTER")
// over the shared ADS stream to the bootstrap's first server, and reports
// its tree to cc as the resources arrive. It fails when the target names
// no cluster or no bootstrap can be had.
func (b *Builder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	name, err := clusterName(target)
	if err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	c, key, err := b.acquire(opts)
	if err != nil {
		return nil, err
	}
	r := &xdsResolver{b: b, c: c, key: key, cc: cc, cluster: name, logger: opts.Logger.With("cluster", name)}
	r.mu.Lock()
	r.cdsWatch = c.watch(ClusterType, name, clusterWatcher{r})
	r.mu.Unlock()
	return r, nil
}

// config returns the Builder's settings, reading the bootstrap from the
// environment for the zero Builder.
func (b *Builder) config() (builderConfig, error) {
	if b.cfg != nil && b.cfg.bootstrap != nil {
		return *b.cfg, nil
	}
	cfg := defaultConfig()
	if b.cfg != nil {
		cfg = *b.cfg
	}
	boot, err := LoadBootstrap()
	if err != nil {
		return cfg, err
	}
	if len(boot.Servers) == 0 {
		return cfg, errors.New("xds: the bootstrap has no server")
	}
	cfg.bootstrap = boot
	return cfg, nil
}

// acquire returns the client for the bootstrap's first server and opts'
// clock, starting it if needed, and counts the reference.
func (b *Builder) acquire(opts resolver.BuildOptions) (*client, poolKey, error) {
	cfg, err := b.config()
	if err != nil {
		return nil, poolKey{}, err
	}
	server := cfg.bootstrap.Servers[0]
	key := poolKey{uri: server.URI, clock: opts.Clock}
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.clients[key]; p != nil {
		p.refs++
		return p.c, key, nil
	}
	dial, err := server.DialOptions()
	if err != nil {
		return nil, poolKey{}, err
	}
	c, err := newClient(clientConfig{
		server:          server,
		node:            cfg.bootstrap.Node.Proto(),
		dialOptions:     append(dial, cfg.dialOptions...),
		clock:           opts.Clock,
		logger:          opts.Logger.With("server", server.URI),
		backoff:         cfg.backoff,
		resourceTimeout: cfg.resourceTimeout,
		seed:            opts.Rand.Uint64(),
	}, clusterResource, endpointResource)
	if err != nil {
		return nil, poolKey{}, err
	}
	if b.clients == nil {
		b.clients = make(map[poolKey]*pooled)
	}
	b.clients[key] = &pooled{c: c, refs: 1}
	return c, key, nil
}

// release drops a reference to the client of key, closing it with the
// last.
func (b *Builder) release(key poolKey) {
	b.mu.Lock()
	p := b.clients[key]
	p.refs--
	last := p.refs == 0
	if last {
		delete(b.clients, key)
	}
	b.mu.Unlock()
	if last {
		p.c.close()
	}
}
