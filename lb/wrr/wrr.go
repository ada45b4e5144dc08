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

// Config is an [lb.PolicyConfig]: usable wherever a service config or a
// child policy is taken, as the JSON object its MarshalJSON makes.
var _ lb.PolicyConfig = Config{}

// PolicyName returns [Name], making Config an [lb.PolicyConfig].
func (Config) PolicyName() string { return Name }

// MarshalJSON returns the JSON object c stands for, A58's fields at its top
// level as in JSON: zero fields are left out (and so take their defaults),
// durations are in proto3 JSON form, and [NoBlackout] and
// [NoErrorPenalty] are written as the explicit zeros they stand for.
func (c Config) MarshalJSON() ([]byte, error) {
	lr := c.LoadReports
	d := lb.FormatNonZeroDuration
	blackout := d(lr.BlackoutPeriod)
	if lr.BlackoutPeriod == NoBlackout {
		blackout = "0s"
	}
	var penalty *float64
	switch {
	case lr.ErrorUtilizationPenalty == NoErrorPenalty:
		penalty = new(float64)
	case lr.ErrorUtilizationPenalty != 0:
		penalty = &lr.ErrorUtilizationPenalty
	}
	return json.Marshal(struct {
		RandomStart             bool              `json:"randomStart,omitempty"`
		BlackoutPeriod          string            `json:"blackoutPeriod,omitempty"`
		WeightExpirationPeriod  string            `json:"weightExpirationPeriod,omitempty"`
		WeightUpdatePeriod      string            `json:"weightUpdatePeriod,omitempty"`
		ErrorUtilizationPenalty *float64          `json:"errorUtilizationPenalty,omitempty"`
		OOBReportingPeriod      string            `json:"oobReportingPeriod,omitempty"`
		SlowStart               *slowstart.Config `json:"slowStartConfig,omitempty"`
	}{c.RandomStart, blackout, d(lr.WeightExpirationPeriod), d(lr.WeightUpdatePeriod), penalty, d(lr.OOBReportingPeriod), c.SlowStart})
}

// Builder builds weighted_round_robin balancers and parses their config
// (the policy's ReadConfig and Build). The zero value is ready to use; it
// is what this package registers under [Name].
type Builder = endpointlist.Builder[policy]

// policy is weighted_round_robin's [endpointlist.Leaf].
type policy struct{}

// Name returns [Name].
func (policy) Name() string { return Name }

// ReadConfig reads a weighted_round_robin config object into a [Config].
// Empty input and null mean the zero Config. An error is a
// [*lb.ConfigError] naming the offending field.
func (policy) ReadConfig(obj lb.ConfigObject) (lb.Config, error) {
	var c Config
	if err := obj.Decode(&c.RandomStart, "randomStart", "random_start"); err != nil {
		return nil, err
	}
	if err := parseLoadReportConfig(obj, &c.LoadReports); err != nil {
		return nil, err
	}
	var err error
	c.SlowStart, err = slowstart.ParseField(obj)
	return c, err
}

// Build returns a new weighted_round_robin balancer reporting to cc. It
// accepts, as [lb.ClientConnState.BalancerConfig], a [Config], a *Config or
// nil (the zero Config). Build publishes nothing; the first
// UpdateClientConnState does.
func (policy) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
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
