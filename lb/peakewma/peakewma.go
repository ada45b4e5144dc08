package peakewma

import (
	"bytes"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/endpointlist"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// Name is the policy's name in loadBalancingConfig and in the [lb] registry.
// It is experimental, as gRPC names policies no gRFC defines yet.
const Name = "peak_ewma_experimental"

// The defaults and bounds of [Config]'s durations.
const (
	// DefaultDecayTime is the decay time of a config that sets none:
	// Finagle's, Linkerd's and Envoy's default.
	DefaultDecayTime = 10 * time.Second
	// DefaultDefaultRTT is the round-trip time an endpoint starts from when
	// no other endpoint has an estimate to lend it: Envoy's default_rtt.
	DefaultDefaultRTT = 10 * time.Millisecond
	// DefaultFailurePenalty is what a failed request adds to its
	// round-trip time before it enters the estimate.
	DefaultFailurePenalty = time.Second
	// MinDecayTime is the smallest decay time: the estimate's clock has a
	// resolution of about 1 ms (docs/choices.md), 1% of it.
	MinDecayTime = 100 * time.Millisecond
	// MaxDuration is the largest value of every duration of a Config.
	MaxDuration = time.Hour
)

func init() { lb.Register(Builder{}) }

// Config is peak_ewma_experimental's configuration, the JSON object
// {"decayTime": "10s", "defaultRtt": "0.010s", "failurePenalty": "1s",
// "slowStartConfig": {...}}, each duration field a proto3 JSON
// google.protobuf.Duration (its proto twin "decay_time", "default_rtt",
// "failure_penalty", "slow_start_config" is accepted too). A zero
// field, as in the zero Config an update may carry, means its default.
type Config struct {
	// DecayTime is the time constant τ of the round-trip estimate: a past
	// sample's weight falls by e every τ, and an idle endpoint's estimate
	// decays toward zero at that rate. From [MinDecayTime] to
	// [MaxDuration]; default [DefaultDecayTime].
	DecayTime time.Duration
	// DefaultRTT is the estimate of a new endpoint when no other endpoint
	// has one. Above zero, at most [MaxDuration]; default
	// [DefaultDefaultRTT].
	DefaultRTT time.Duration
	// FailurePenalty is added to the round-trip time of a failed request
	// (DoneInfo.Err set, other than [lb.ErrRequestNotSent]) before it
	// enters the estimate, so that an endpoint that fails fast does not
	// draw the traffic. Above zero, at most [MaxDuration]; default
	// [DefaultFailurePenalty].
	FailurePenalty time.Duration
	// SlowStart, when not nil, ramps each endpoint that becomes READY
	// over a window (package slowstart): while it ramps, its cost is
	// divided by its factor when picks compare endpoints, as Envoy's
	// least-request slow start divides by the effective weight, and picks
	// draw it in proportion to its factor (docs/choices.md). The JSON field is "slowStartConfig" (or
	// "slow_start_config"). Default: nil, no slow start.
	SlowStart *slowstart.Config
}

// effective returns c with every zero field set to its default.
func (c Config) effective() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.DecayTime, DefaultDecayTime)
	def(&c.DefaultRTT, DefaultDefaultRTT)
	def(&c.FailurePenalty, DefaultFailurePenalty)
	c.DecayTime = min(max(c.DecayTime, MinDecayTime), MaxDuration)
	c.DefaultRTT = min(c.DefaultRTT, MaxDuration)
	c.FailurePenalty = min(c.FailurePenalty, MaxDuration)
	return c
}

// Builder builds peak_ewma_experimental balancers and parses their config
// (the policy's ReadConfig and Build). The zero value is ready to use; it
// is what this package registers under [Name].
type Builder = endpointlist.Builder[policy]

// policy is peak_ewma_experimental's [endpointlist.Leaf].
type policy struct{}

// Name returns [Name].
func (policy) Name() string { return Name }

// ReadConfig reads a peak_ewma_experimental config object into a [Config]
// with every default filled in. Empty input and null mean the defaults. An
// error is a [*lb.ConfigError] naming the offending field: a value that is
// not a duration, or one out of its range.
func (policy) ReadConfig(obj lb.ConfigObject) (lb.Config, error) {
	var c Config
	for _, f := range []struct {
		dst    *time.Duration
		def    time.Duration
		lowest time.Duration
		names  []string
	}{
		{&c.DecayTime, DefaultDecayTime, MinDecayTime, []string{"decayTime", "decay_time"}},
		{&c.DefaultRTT, DefaultDefaultRTT, 1, []string{"defaultRtt", "default_rtt"}},
		{&c.FailurePenalty, DefaultFailurePenalty, 1, []string{"failurePenalty", "failure_penalty"}},
	} {
		d, err := durationField(obj, f.def, f.lowest, f.names...)
		if err != nil {
			return nil, err
		}
		*f.dst = d
	}
	var err error
	c.SlowStart, err = slowstart.ParseField(obj)
	return c, err
}

// durationField parses the first present field among names as a
// google.protobuf.Duration from lowest to [MaxDuration]; missing or null is
// def.
func durationField(obj lb.ConfigObject, def, lowest time.Duration, names ...string) (time.Duration, error) {
	raw, name, ok := obj.Raw(names...)
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return def, nil
	}
	d, err := lb.ParseDuration(raw)
	switch {
	case err != nil:
		return 0, lb.PrefixConfigError(name, err)
	case d < lowest:
		return 0, lb.ConfigErrorf(name, "must be at least %v, got %s", lowest, raw)
	case d > MaxDuration:
		return 0, lb.ConfigErrorf(name, "must be at most %v, got %s", MaxDuration, raw)
	}
	return d, nil
}

// Build returns a new peak_ewma_experimental balancer reporting to cc. It
// accepts, as [lb.ClientConnState.BalancerConfig], a [Config], a *Config or
// nil (the defaults). Build publishes nothing; the first
// UpdateClientConnState does.
func (policy) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &balancer{rand: opts.Rand, meter: newMeter(opts.Clock)}
	b.List = endpointlist.NewCounted(cc, opts, endpointlist.Policy[endpointData]{
		Name: Name, BuildPicker: b.buildPicker, ResolveOnDisconnect: true,
	})
	return b
}
