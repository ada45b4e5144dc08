package pickfirst

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Name is the policy's name in loadBalancingConfig and in the [lb] registry.
const Name = "pick_first"

func init() { lb.Register(Builder{}) }

// Config is pick_first's configuration, the JSON object
// {"shuffleAddressList": bool}. The zero value keeps the resolver's order.
type Config struct {
	// ShuffleAddressList, when true, shuffles the address list of every
	// update from the parent before connecting (gRFC A62). The JSON field
	// is "shuffleAddressList" (or its proto twin "shuffle_address_list").
	ShuffleAddressList bool
}

// Builder builds pick_first balancers and parses their config. The zero value
// is ready to use; it is what this package registers under [Name].
type Builder struct{}

// Register in init checks that Builder is an lb.Builder.
var _ lb.ConfigParser = Builder{}

// Name returns [Name].
func (Builder) Name() string { return Name }

// ParseConfig parses a pick_first config object into a [Config] and lists
// the fields it does not know ([lb.ConfigParser]). Empty input and null
// mean the zero Config. An error is a [*lb.ConfigError] naming the
// offending field.
func (Builder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (Config, error) {
		var c Config
		err := obj.Decode(&c.ShuffleAddressList, "shuffleAddressList", "shuffle_address_list")
		return c, err
	})
}

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
