package conn

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/resolver"
)

// DefaultIdleTimeout is how long a channel stays active with no pick before
// it goes IDLE, as gRFC A62 recommends.
const DefaultIdleTimeout = 30 * time.Minute

// DefaultMinConnectTimeout is the least time one connection attempt is
// given (MIN_CONNECT_TIMEOUT of gRPC's connection-backoff document).
const DefaultMinConnectTimeout = 20 * time.Second

// Option configures a [Channel].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	clock                clock.Clock
	logger               *slog.Logger
	seed                 *[2]uint64
	dialer               Dialer
	defaultServiceConfig string
	defaultSCOption      string // the option that set it, for New's error
	defaultSCErr         error  // WithDefaultPolicy's config did not marshal
	defaultScheme        string
	resolverBuilder      resolver.Builder
	idleTimeout          time.Duration
	backoff              backoff.Config
	minConnectTimeout    time.Duration
	registry             *lb.Registry
	healthCheck          *HealthCheck // nil: only if the service config asks
	healthCheckOff       bool
	metrics              lb.MetricsRecorder
	strictConfig         bool
}

func defaultConfig() config {
	return config{
		defaultScheme:     "dns",
		idleTimeout:       DefaultIdleTimeout,
		backoff:           backoff.ChannelDefault(),
		minConnectTimeout: DefaultMinConnectTimeout,
	}
}

// WithClock runs every timer of the channel and its balancer tree (backoff,
// idleness, failover, resolver polling) on c. If this option is not
// supplied, the real clock is used.
func WithClock(c clock.Clock) Option {
	return optionFunc(func(cfg *config) { cfg.clock = c })
}

// WithLogger sends the channel's and its policies' logs to l, every level
// l enables. If this option is not supplied, WARN and ERROR records (a
// misspelt service config key, a config refused, a resolver failing) go to
// [slog.Default] as it is when [New] runs, and INFO and DEBUG records are
// discarded; WithLogger(slog.New(slog.DiscardHandler)) discards everything.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(cfg *config) { cfg.logger = l })
}

// WithRandSeed seeds every random choice of the channel and its policies
// (backoff jitter, shuffles, random starts), making them reproducible. If
// this option is not supplied, the source is seeded at random.
func WithRandSeed(seed1, seed2 uint64) Option {
	return optionFunc(func(cfg *config) { cfg.seed = &[2]uint64{seed1, seed2} })
}

// WithDialer makes d open every connection. If this option is not supplied,
// [TCPDialer] is used.
func WithDialer(d Dialer) Option {
	return optionFunc(func(cfg *config) { cfg.dialer = d })
}

// WithDefaultServiceConfig sets the service config (JSON, such as
// {"loadBalancingConfig":[{"weighted_round_robin":{}}]}) used while the
// resolver provides none. It is parsed by New; an invalid one is New's
// error. If this option is not supplied, the default is pick_first.
func WithDefaultServiceConfig(json string) Option {
	return optionFunc(func(cfg *config) {
		cfg.defaultServiceConfig, cfg.defaultSCOption, cfg.defaultSCErr = json, "WithDefaultServiceConfig", nil
	})
}

// WithDefaultPolicy sets the default service config to the one whose
// loadBalancingConfig is p, the typed form of a policy's JSON config, such
// as
//
//	conn.WithDefaultPolicy(outlierdetection.Policy{
//		Detection: outlierdetection.Detection{
//			FailurePercentageEjection: &outlierdetection.FailurePercentageEjection{Threshold: 50},
//		},
//		ChildPolicy: roundrobin.Config{},
//	})
//
// It is WithDefaultServiceConfig(s) where s is
// [lb.MarshalServiceConfig](p), {"loadBalancingConfig":[{"<name>":{...}}]}:
// New parses it with the same parser and rejects it with the same
// error, whose JSON path locates the offending field (such as
// loadBalancingConfig[0].outlier_detection_experimental.childPolicy: ...).
// A nil p, or one that does not marshal, is New's error. This option and
// WithDefaultServiceConfig set the same thing: the last one given wins.
func WithDefaultPolicy(p lb.PolicyConfig) Option {
	return optionFunc(func(cfg *config) {
		cfg.defaultServiceConfig, cfg.defaultSCErr = lb.MarshalServiceConfig(p)
		cfg.defaultSCOption = "WithDefaultPolicy"
	})
}

// WithDefaultScheme sets the scheme for targets that have none. If this
// option is not supplied, it is "dns".
func WithDefaultScheme(scheme string) Option {
	return optionFunc(func(cfg *config) { cfg.defaultScheme = scheme })
}

// WithResolver resolves the target with b whatever its scheme, instead of the
// registered builder; useful with a manual resolver. If this option is not
// supplied, the builder registered for the target's scheme is used.
func WithResolver(b resolver.Builder) Option {
	return optionFunc(func(cfg *config) { cfg.resolverBuilder = b })
}

// WithIdleTimeout sets how long the channel may go without a pick before it
// closes its balancer, resolver and connections and reports IDLE; 0
// disables idleness. The channel checks for activity ten times per period,
// so it goes IDLE between d and 1.1·d after the last pick. If this option is
// not supplied, it is [DefaultIdleTimeout].
func WithIdleTimeout(d time.Duration) Option {
	return optionFunc(func(cfg *config) { cfg.idleTimeout = d })
}

// WithBackoff sets the connection backoff, also used between
// re-resolutions. If this option is not supplied, it is
// [backoff.ChannelDefault]: 1 s, ×1.6, jitter 0.2, at most 10 s (gRPC's
// schedule with its 120 s cap lowered to the default health-check
// interval). With health checking on, a connection backing off is also
// probed at the health-check interval, and a passing probe ends the
// backoff ([HealthCheck]).
func WithBackoff(b backoff.Config) Option {
	return optionFunc(func(cfg *config) { cfg.backoff = b })
}

// WithMinConnectTimeout sets the least time a connection attempt is given.
// If this option is not supplied, it is [DefaultMinConnectTimeout].
func WithMinConnectTimeout(d time.Duration) Option {
	return optionFunc(func(cfg *config) { cfg.minConnectTimeout = d })
}

// WithRegistry looks up the policies that service configs name in r, and
// the default policy ([DefaultPolicy]) too. Parent policies parse their
// children's lists with the registry they were built with (see
// priority.WithRegistry, weightedtarget.Builder and
// outlierdetection.Builder), so register in r parents built with r. If
// this option is not supplied, or r is nil, it is [lb.DefaultRegistry],
// where the built-in policies register themselves.
func WithRegistry(r *lb.Registry) Option {
	return optionFunc(func(cfg *config) { cfg.registry = r })
}

// WithHealthCheck turns on active health checking (gRFC A17) with h, for
// the SubConns of policies that ask for it (weighted_round_robin,
// round_robin, least_request; not pick_first, as A17 says: a channel
// whose policy creates a connection without asking, while health checking
// is on, logs a warning naming the policy, once). The service
// config's healthCheckConfig.serviceName, when set, is passed to the
// checker. If this option is not supplied, health checking is on only when
// the service config sets healthCheckConfig.serviceName, with the defaults
// of [HealthCheck] (a TCP connect check).
func WithHealthCheck(h HealthCheck) Option {
	return optionFunc(func(cfg *config) { cfg.healthCheck = &h })
}

// WithoutHealthCheck turns health checking off, even when the service
// config asks for it (A17's channel argument). If this option is not
// supplied, the service config and [WithHealthCheck] decide.
func WithoutHealthCheck() Option {
	return optionFunc(func(cfg *config) { cfg.healthCheckOff = true })
}

// WithMetricsRecorder records the channel's and its policies' metrics
// (listed by [lb.MetricDescs], such as [MetricFailedPicks]) with r; adapters/otel makes one that records
// into OpenTelemetry. If this option is not supplied, or r is nil, nothing
// is recorded.
func WithMetricsRecorder(r lb.MetricsRecorder) Option {
	return optionFunc(func(cfg *config) { cfg.metrics = r })
}

func (c *config) validate() error {
	var errs []error
	if c.healthCheck != nil {
		if err := c.healthCheck.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.defaultSCErr != nil {
		errs = append(errs, fmt.Errorf("WithDefaultPolicy: %w", c.defaultSCErr))
	}
	if c.idleTimeout < 0 {
		errs = append(errs, fmt.Errorf("WithIdleTimeout: must be >= 0, got %v", c.idleTimeout))
	}
	if c.minConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("WithMinConnectTimeout: must be positive, got %v", c.minConnectTimeout))
	}
	if c.defaultScheme == "" {
		errs = append(errs, errors.New("WithDefaultScheme: must not be empty"))
	}
	if err := c.backoff.Validate("WithBackoff"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *config) withDefaults() {
	if c.clock == nil {
		c.clock = clock.New()
	}
	if c.logger == nil {
		c.logger = DefaultLogger()
	}
	if c.dialer == nil {
		c.dialer = TCPDialer{}
	}
	if c.registry == nil {
		c.registry = lb.DefaultRegistry()
	}
	if c.metrics == nil {
		c.metrics = lb.NopMetrics()
	}
}

func (c *config) newRand() *rand.Rand {
	if c.seed != nil {
		return rand.New(rand.NewPCG(c.seed[0], c.seed[1]))
	}
	return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
}

// WithStrictConfig makes a service config field that gRPC's service config
// does not have (a misspelled "loadBalancingConfg") an error naming its
// JSON path: a resolver's config with one is invalid (the last valid one
// stays in force) and so is a [WithDefaultServiceConfig] with one. If this
// option is not supplied, such fields are ignored, as gRPC ignores them,
// and logged at WARN once per distinct config.
func WithStrictConfig() Option {
	return optionFunc(func(c *config) { c.strictConfig = true })
}
