package wrr

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
