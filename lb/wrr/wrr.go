package wrr

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// Name is the policy's name in loadBalancingConfig and in the [lb] registry.
const Name = "weighted_round_robin"

func init() { lb.Register(Builder{}) }

// Config is weighted_round_robin's configuration, the JSON object
// {"randomStart": bool, "slowStartConfig": {...}}. The zero value, also what {} and an absent config
// give, is the specification's policy: a new schedule starts at its
// beginning.
type Config struct {
	// RandomStart, when true, starts every new schedule (one with nothing
	// to carry over, such as the first READY picker) at a position drawn
	// uniformly from its period with the tree's random source, so that the
	// first pick goes to endpoint i with probability w_i/W instead of
	// always to the heaviest endpoint. A schedule that continues an
	// earlier one is not affected. The JSON field is "randomStart" (or its
	// proto twin "random_start"). Default: false.
	RandomStart bool
	// LoadReports holds gRFC A58's fields: how backends' load reports
	// weigh endpoints (see the package doc). The zero value is A58's
	// defaults.
	LoadReports LoadReportConfig
	// SlowStart, when not nil, ramps each endpoint's weight over a window
	// from the moment it becomes READY (gRFC A100, draft; package
	// slowstart). The JSON field is "slowStartConfig" (or
	// "slow_start_config"). Default: nil, no slow start.
	SlowStart *slowstart.Config
}

// Builder builds weighted_round_robin balancers and parses their config. The
// zero value is ready to use; it is what this package registers under
// [Name].
type Builder struct{}

// Register in init checks that Builder is an lb.Builder.
var _ lb.ConfigParser = Builder{}

// Name returns [Name].
func (Builder) Name() string { return Name }

// ParseConfig parses a weighted_round_robin config object into a [Config]
// and lists the fields it does not know ([lb.ConfigParser]). Empty input
// and null mean the zero Config. An error is a [*lb.ConfigError] naming
// the offending field.
func (Builder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (Config, error) {
		var c Config
		if err := obj.Decode(&c.RandomStart, "randomStart", "random_start"); err != nil {
			return Config{}, err
		}
		if err := parseLoadReportConfig(obj, &c.LoadReports); err != nil {
			return Config{}, err
		}
		var err error
		c.SlowStart, err = slowstart.ParseField(obj)
		return c, err
	})
}

// Build returns a new weighted_round_robin balancer reporting to cc. It
// accepts, as [lb.ClientConnState.BalancerConfig], a [Config], a *Config or
// nil (the zero Config). Build publishes nothing; the first
// UpdateClientConnState does.
func (Builder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &balancer{
		rand: opts.Rand, logger: opts.PolicyLogger(Name),
		rrFallback:   opts.Metrics.Counter(MetricRRFallback, cc.Target(), ""),
		notYetUsable: opts.Metrics.Counter(MetricEndpointWeightNotYetUsable, cc.Target(), ""),
		loadState:    loadState{clock: opts.Clock, sched: opts.Scheduler},
	}
	b.buildLoadMetrics(opts.Metrics, cc.Target())
	b.List = endpointlist.New(cc, opts, b.logger, endpointlist.Policy[endpointData]{
		Name:        "wrr",
		BuildPicker: b.buildReadyPicker,
		// gRFC A58: the blackout restarts (the list restarts A100's ramp).
		OnReady: func(ep *endpoint) { ep.Data.load.becameReady() },
	})
	b.SlowStart().CountPickers(opts.Metrics.Counter(MetricEndpointsInSlowStart, cc.Target(), ""))
	return b
}
