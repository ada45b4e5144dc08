package peakewma

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// Config is an [lb.PolicyConfig]: usable wherever a service config or a
// child policy is taken, as the JSON object its MarshalJSON makes.
var _ lb.PolicyConfig = Config{}

// PolicyName returns [Name], making Config an [lb.PolicyConfig].
func (Config) PolicyName() string { return Name }

// MarshalJSON returns the JSON object c stands for: its non-zero fields
// under their JSON names, in proto3 JSON duration form (a zero field is
// left out, and so takes its default), and its slow start config under
// "slowStartConfig" when set.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		DecayTime      string            `json:"decayTime,omitempty"`
		DefaultRTT     string            `json:"defaultRtt,omitempty"`
		FailurePenalty string            `json:"failurePenalty,omitempty"`
		SlowStart      *slowstart.Config `json:"slowStartConfig,omitempty"`
	}{
		lb.FormatNonZeroDuration(c.DecayTime), lb.FormatNonZeroDuration(c.DefaultRTT),
		lb.FormatNonZeroDuration(c.FailurePenalty), c.SlowStart,
	})
}
