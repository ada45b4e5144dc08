package roundrobin

import (
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// Config is round_robin's configuration, the JSON object
// {"slowStartConfig": {...}}. The zero value, also what {} and an absent
// config give, is gRPC's round_robin, which takes no config.
type Config struct {
	// SlowStart, when not nil, ramps the share of each endpoint that
	// becomes READY over a window (Envoy's slow_start_config, gRFC A100's
	// slowStartConfig; package slowstart): while an endpoint ramps, the
	// picker is an EDF schedule over the endpoints' factors instead of a
	// rotation. The JSON field is "slowStartConfig" (or
	// "slow_start_config"). Default: nil, no slow start.
	SlowStart *slowstart.Config `json:"slowStartConfig,omitempty"`
}

// ReadConfig reads a round_robin config object into a [Config]; unknown
// fields are ignored, as gRPC ignores round_robin's whole config (the
// Builder's ParseConfig lists them). Empty input and null mean the zero
// Config. An error is a [*lb.ConfigError] naming the offending field, such
// as "slowStartConfig.aggression".
func (policy) ReadConfig(obj lb.ConfigObject) (lb.Config, error) {
	s, err := slowstart.ParseField(obj)
	return Config{SlowStart: s}, err
}
