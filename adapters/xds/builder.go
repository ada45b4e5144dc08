package xds

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/dns"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// The schemes this package resolves: "xds:///LISTENER" follows a
// listener, as gRPC does (gRFC A27, A28); "xds-cluster:///CLUSTER"
// follows one cluster.
const (
	Scheme        = "xds"
	ClusterScheme = "xds-cluster"
)

func init() {
	b := &Builder{}
	resolver.Register(b)
	resolver.Register(b.ForClusters())
}

// builderConfig is what a Builder's options set.
type builderConfig struct {
	bootstrap       *Bootstrap
	resourceTimeout time.Duration
	backoff         backoff.Config
	dialOptions     []grpc.DialOption
	metrics         lb.MetricsRecorder // nil: none
	dns             *dns.Builder       // nil: dns.NewBuilder()'s defaults
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

// WithMetrics records gRFC A78's XdsClient metrics ([MetricConnected] and
// the others of this package, registered with [lb.RegisterMetric]) into
// rec: each resolver records its own channel's view, labeled with its
// target. The Builder's resolvers still share ADS streams with other
// Builders'. rec must not be nil.
func WithMetrics(rec lb.MetricsRecorder) Option {
	return optionFunc(func(c *builderConfig) error {
		if rec == nil {
			return errors.New("xds: WithMetrics: the recorder is nil")
		}
		c.metrics = rec
		return nil
	})
}

// WithDNS resolves the host of LOGICAL_DNS clusters (gRFC A37) with b,
// for its lookup, its intervals and its backoff; the default is the dns
// package's defaults (a zero dns.Builder): a 30 s poll interval and
// floor. Each resolution runs on the channel's clock. b must not be nil.
func WithDNS(b *dns.Builder) Option {
	return optionFunc(func(c *builderConfig) error {
		if b == nil {
			return errors.New("xds: WithDNS: the builder is nil")
		}
		c.dns = b
		return nil
	})
}

// Builder builds "xds" resolvers.
//
// Resolvers share ADS streams across the whole process: every resolver
// built for the same management server, with the same credentials, node,
// clock and options, by this Builder or any other, uses one client and one
// stream, opened by the first and closed with the last. A Builder given
// [WithDialOptions] shares only among its own resolvers (dial options
// cannot be compared).
//
// A bootstrap that lists more than one server gets gRFC A71's fallback:
// while the servers before it cannot be reached and a resource a channel
// watches is not cached, the client streams to the next server and uses
// its resources, until an earlier server answers again. Each channel
// target then has a client of its own, so that one channel's fallback
// moves no other.
//
// The zero Builder, which importing this package registers, reads its
// bootstrap from the environment ([LoadBootstrap]) when it builds its first
// resolver and uses the defaults of every option. Use [NewBuilder] and
// conn.WithResolver (or resolver.Register) for other settings.
//
// A Builder is safe for concurrent use.
type Builder struct {
	cfg *builderConfig // nil: the defaults, bootstrap from the environment
}

// clients is the process's ADS clients, by what they were made with: a
// registry, the package's only mutable global state.
var clients = struct {
	sync.Mutex
	m map[poolKey]*pooled
}{m: make(map[poolKey]*pooled)}

// poolKey says which resolvers share a client.
type poolKey struct {
	server Server // the first
	// fallbacks are the other servers, encoded; target is the channel
	// target when there are any.
	fallbacks, target string
	node              string // the node's deterministic protobuf encoding
	clock             clock.Clock
	resourceTimeout   time.Duration
	backoff           backoff.Config
	// owner is the Builder when it has dial options, else nil.
	owner *Builder
}

type pooled struct {
	c    *client
	refs int
}

// NewBuilder returns a Builder with opts applied.
func NewBuilder(opts ...Option) (*Builder, error) {
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("xds: NewBuilder: option %d of %d is nil", i+1, len(opts))
		}
		if err := o.apply(&cfg); err != nil {
			return nil, err
		}
	}
	return &Builder{cfg: &cfg}, nil
}

// Scheme returns "xds".
func (b *Builder) Scheme() string { return Scheme }

// ForClusters returns b for the "xds-cluster" scheme, to register
// ([resolver.Register]) beside b: it builds what b builds, and has its
// Scheme. (Given to a channel whatever the target's scheme, as
// conn.WithResolver does, b itself builds both kinds of resolver, by the
// target's scheme.)
func (b *Builder) ForClusters() resolver.Builder { return clusterBuilder{b} }

// clusterBuilder is a Builder registered under [ClusterScheme].
type clusterBuilder struct{ *Builder }

func (clusterBuilder) Scheme() string { return ClusterScheme }

// targetName returns the name a target's path holds: a cluster's for
// [ClusterScheme], else a listener's (before the bootstrap's template).
func targetName(t resolver.Target) (string, error) {
	form := "xds:///LISTENER"
	if t.Scheme == ClusterScheme {
		form = "xds-cluster:///CLUSTER"
	}
	if t.Authority != "" {
		return "", fmt.Errorf("xds: target %q: an authority (%q) is not supported; use %s", t.String(), t.Authority, form)
	}
	name := strings.TrimPrefix(t.Endpoint, "/")
	if name == "" {
		return "", fmt.Errorf("xds: target %q names nothing; use %s", t.String(), form)
	}
	return name, nil
}

// Build subscribes, over the shared ADS stream to the bootstrap's
// servers, to what the target names, and reports its state to cc as the
// resources arrive:
//   - "xds:///NAME" follows the listener the bootstrap's
//     client_default_listener_resource_name_template names ("%s" replaced
//     by NAME; NAME itself by default): its routes and every cluster they
//     name, published as one xds_routing_experimental tree (package
//     [github.com/lbkit/lbkit/lb/routing]) that routes each request;
//   - "xds-cluster:///NAME" follows cluster NAME and publishes its tree.
//
// It fails when the target names nothing or no bootstrap can be had.
func (b *Builder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	name, err := targetName(target)
	if err != nil {
		return nil, err
	}
	cfg, err := b.config()
	if err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	label := opts.ChannelTarget
	if label == "" {
		label = target.String()
	}
	c, key, err := b.acquire(cfg, opts, label)
	if err != nil {
		return nil, err
	}
	var metrics *resolverMetrics
	if b.cfg != nil && b.cfg.metrics != nil {
		metrics = newResolverMetrics(b.cfg.metrics, b.cfg, label, c.cfg.servers[0].URI)
	}
	env := &followerEnv{c: c, metrics: metrics, dns: &dns.Builder{}, rand: rand.New(rand.NewPCG(opts.Rand.Uint64(), opts.Rand.Uint64()))}
	if b.cfg != nil && b.cfg.dns != nil {
		env.dns = b.cfg.dns
	}
	var start func()
	var res resolver.Resolver
	if target.Scheme == ClusterScheme {
		r := &xdsResolver{c: c, key: key, cc: cc, logger: opts.Logger.With("cluster", name), counter: acquireCounter(name)}
		r.f = env.follower(name, r.logger, r)
		start, res = r.start, r
	} else {
		lname := cfg.bootstrap.ListenerName(name)
		r := newListenerResolver(env, key, cc, lname, opts.Logger.With("listener", lname))
		start, res = r.start, r
	}
	c.ser.Schedule(func() {
		if metrics != nil {
			c.addStreamMetrics(metrics)
		}
		start()
	})
	return res, nil
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

// acquire returns the client for the bootstrap's servers and opts'
// clock, starting it if needed, and counts the reference. With more than
// one server, each channel target has a client of its own (gRFC A71: a
// channel that needs a resource not cached falls back alone).
func (b *Builder) acquire(cfg builderConfig, opts resolver.BuildOptions, target string) (*client, poolKey, error) {
	servers := cfg.bootstrap.Servers
	node := cfg.bootstrap.Node.Proto()
	nodeKey, err := proto.MarshalOptions{Deterministic: true}.Marshal(node)
	if err != nil {
		return nil, poolKey{}, fmt.Errorf("xds: encoding the node: %w", err)
	}
	key := poolKey{server: servers[0], node: string(nodeKey), clock: clockKey(opts.Clock), resourceTimeout: cfg.resourceTimeout, backoff: cfg.backoff}
	if len(servers) > 1 {
		rest, err := json.Marshal(servers[1:]) // plain strings and booleans
		if err != nil {
			return nil, poolKey{}, fmt.Errorf("xds: encoding the servers: %w", err)
		}
		key.fallbacks, key.target = string(rest), target
	}
	if len(cfg.dialOptions) > 0 {
		key.owner = b
	}
	clients.Lock()
	defer clients.Unlock()
	if p := clients.m[key]; p != nil {
		p.refs++
		return p.c, key, nil
	}
	var scs []serverConfig
	for _, server := range servers {
		dial, err := server.DialOptions()
		if err != nil {
			return nil, poolKey{}, err
		}
		scs = append(scs, serverConfig{Server: server, dialOptions: append(dial, cfg.dialOptions...)})
	}
	c, err := newClient(clientConfig{
		servers:         scs,
		node:            node,
		clock:           opts.Clock,
		logger:          opts.Logger.With("server", servers[0].URI),
		backoff:         cfg.backoff,
		resourceTimeout: cfg.resourceTimeout,
		seed:            opts.Rand.Uint64(),
	}, clusterResource, endpointResource, listenerResource, routeConfigResource)
	if err != nil {
		return nil, poolKey{}, err
	}
	clients.m[key] = &pooled{c: c, refs: 1}
	return c, key, nil
}

// realClock is the type of clock.New's clocks.
var realClock = reflect.TypeOf(clock.New())

// clockKey is c for the pool's key: every real clock is the same clock
// (nil), any other (a mock) is itself.
func clockKey(c clock.Clock) clock.Clock {
	if reflect.TypeOf(c) == realClock {
		return nil
	}
	return c
}

// release drops a reference to the client of key, closing it with the
// last.
func release(key poolKey) {
	clients.Lock()
	p := clients.m[key]
	p.refs--
	last := p.refs == 0
	if last {
		delete(clients.m, key)
	}
	clients.Unlock()
	if last {
		p.c.close()
	}
}
