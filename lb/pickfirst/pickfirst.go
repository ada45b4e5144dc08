package pickfirst

import (
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Name is the policy's name in loadBalancingConfig and in the [lb] registry.
const Name = "pick_first"

func init() { lb.Register(Builder{}) }

// Builder builds pick_first balancers and parses their config. The zero value
// is ready to use; it is what this package registers under [Name].
type Builder struct{}

// Register in init checks that Builder is an lb.Builder.
var _ lb.ConfigParser = Builder{}

// Name returns [Name].
func (Builder) Name() string { return Name }

// Build returns a new pick_first balancer reporting to cc. It accepts, as
// [lb.ClientConnState.BalancerConfig], a [Config], a *Config or nil (the zero
// Config).
func (Builder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return &balancer{
		cc:       cc,
		sched:    opts.Scheduler,
		rand:     opts.Rand,
		logger:   opts.PolicyLogger(Name),
		subConns: make(map[resolver.Address]*subConn),
		seen:     make(map[resolver.Address]struct{}),
		state:    lb.Idle,

		attemptsSucceeded: opts.Metrics.Counter(MetricConnectionAttemptsSucceeded, cc.Target()),
		attemptsFailed:    opts.Metrics.Counter(MetricConnectionAttemptsFailed, cc.Target()),
		disconnections:    opts.Metrics.Counter(MetricDisconnections, cc.Target()),
	}
}
