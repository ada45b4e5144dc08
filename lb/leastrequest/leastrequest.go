package leastrequest

import (
	"bytes"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// Name is the policy's name in loadBalancingConfig and in the [lb] registry,
// the name gRFC A48 gives it.
const Name = "least_request_experimental"

// The bounds of [Config.ChoiceCount], from gRFC A48.
const (
	// DefaultChoiceCount is the choice count of a config that sets none.
	DefaultChoiceCount = 2
	// MinChoiceCount is the smallest choice count a config may set; a
	// smaller one is rejected.
	MinChoiceCount = 2
	// MaxChoiceCount is the largest effective choice count; a larger one
	// is lowered to it.
	MaxChoiceCount = 10
)

func init() { lb.Register(Builder{}) }

// Config is least_request_experimental's configuration, the JSON object
// {"choiceCount": n, "slowStartConfig": {...}}.
type Config struct {
	// ChoiceCount is how many READY endpoints each pick samples (at
	// random, with replacement) before taking the one with the fewest
	// outstanding requests. The JSON field is "choiceCount" (or its proto
	// twin "choice_count"), a proto3 JSON uint32. Absent or null, it is
	// [DefaultChoiceCount]; below [MinChoiceCount] the config is rejected;
	// above [MaxChoiceCount] it is lowered to MaxChoiceCount. The zero
	// Config (ChoiceCount 0), as an update may carry, means the default.
	ChoiceCount uint32 `json:"choiceCount,omitempty"`
	// SlowStart, when not nil, ramps each endpoint that becomes READY
	// over a window (package slowstart): while it ramps, its outstanding
	// requests count as (n+1)/factor when picks compare endpoints, Envoy's
	// weighted least request with active_request_bias 1, and picks draw
	// it in proportion to its factor (docs/choices.md).
	// The JSON field is "slowStartConfig" (or "slow_start_config").
	// Default: nil, no slow start.
	SlowStart *slowstart.Config `json:"slowStartConfig,omitempty"`
}

// effective returns the choice count the picker uses.
func (c Config) effective() int {
	switch {
	case c.ChoiceCount == 0:
		return DefaultChoiceCount
	case c.ChoiceCount < MinChoiceCount:
		return MinChoiceCount
	case c.ChoiceCount > MaxChoiceCount:
		return MaxChoiceCount
	}
	return int(c.ChoiceCount)
}

// Builder builds least_request_experimental balancers and parses their
// config (the policy's ReadConfig and Build). The zero value is ready to
// use; it is what this package registers under [Name].
type Builder = endpointlist.Builder[policy]

// policy is least_request_experimental's [endpointlist.Leaf].
type policy struct{}

// Name returns [Name].
func (policy) Name() string { return Name }

// ReadConfig reads a least_request_experimental config object into a
// [Config] whose ChoiceCount is the effective one, from [MinChoiceCount]
// to [MaxChoiceCount]. Empty input and null mean the default. An error is
// a [*lb.ConfigError] naming the offending field.
func (policy) ReadConfig(obj lb.ConfigObject) (lb.Config, error) {
	c := Config{ChoiceCount: DefaultChoiceCount}
	v, name, ok := obj.Raw("choiceCount", "choice_count")
	if ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		n, err := lb.ParseUint32(v, MinChoiceCount)
		if err != nil {
			return nil, lb.PrefixConfigError(name, err)
		}
		c.ChoiceCount = min(n, MaxChoiceCount)
	}
	var err error
	c.SlowStart, err = slowstart.ParseField(obj)
	return c, err
}

// Build returns a new least_request_experimental balancer reporting to cc.
// It accepts, as [lb.ClientConnState.BalancerConfig], a [Config], a *Config
// or nil (the default). Build publishes nothing; the first
// UpdateClientConnState does.
func (policy) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &balancer{rand: opts.Rand}
	b.List = endpointlist.NewCounted(cc, opts, endpointlist.Policy[endpointData]{
		Name: Name, BuildPicker: b.buildPicker, ResolveOnDisconnect: true,
	})
	return b
}
