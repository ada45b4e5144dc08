package slowstart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// The defaults of a slowStartConfig object's optional fields (Envoy's and
// gRFC A100's).
const (
	// DefaultAggression is the aggression of a config that sets none: a
	// linear ramp.
	DefaultAggression = 1.0
	// DefaultMinWeightPercent is the minimum weight percent of a config
	// that sets none.
	DefaultMinWeightPercent = 10.0
)

// Config is one policy's slow start, the JSON object
//
//	{"slowStartWindow": "30s", "aggression": 1.0, "minWeightPercent": 10}
//
// found under a policy config's "slowStartConfig" field. The field names
// are A100's; each one's snake_case twin ("slow_start_window") is accepted
// too, as proto3 JSON allows. A Config is a value: policies never change
// it.
type Config struct {
	// SlowStartWindow is how long an endpoint's ramp lasts, from the
	// moment it becomes READY. It must be positive. JSON: a proto3
	// duration string such as "30s" (required).
	SlowStartWindow time.Duration `json:"slowStartWindow"`
	// Aggression shapes the ramp: the factor grows as time_factor to the
	// power 1/Aggression, so 1 is linear and larger values ramp faster at
	// first. It must be positive and finite. JSON: a number (or a proto3
	// JSON string holding one); absent or null means
	// [DefaultAggression].
	Aggression float64 `json:"aggression"`
	// MinWeightPercent is the floor of the factor, in percent of the
	// endpoint's weight, from 0 to 100. JSON: a number (or a string
	// holding one); absent or null means [DefaultMinWeightPercent].
	MinWeightPercent float64 `json:"minWeightPercent"`
}

// Validate returns an error, a [*lb.ConfigError] naming the field by its
// lowerCamelCase name (a path relative to the slowStartConfig object), if
// c breaks a rule of [Config]'s fields. Policies call it on a Config built in Go, which skips the parser.
func (c Config) Validate() error {
	switch {
	case c.SlowStartWindow <= 0:
		return lb.ConfigErrorf("slowStartWindow", "must be positive, got %v", c.SlowStartWindow)
	case !(c.Aggression > 0) || math.IsInf(c.Aggression, 0):
		return lb.ConfigErrorf("aggression", "must be positive and finite, got %v", c.Aggression)
	case !(c.MinWeightPercent >= 0 && c.MinWeightPercent <= 100):
		return lb.ConfigErrorf("minWeightPercent", "must be from 0 to 100, got %v", c.MinWeightPercent)
	}
	return nil
}

// Factor returns the factor of an endpoint's weight a time elapsed after
// its start: 1 once elapsed reaches the window (and for a Config whose
// window is not positive), else
// max(MinWeightPercent/100, (max(elapsed, 1s)/SlowStartWindow)^(1/Aggression)),
// never above 1. A negative elapsed counts as 0. c must be valid
// ([Config.Validate]) for the result to mean anything; it is always in
// [0, 1].
func (c Config) Factor(elapsed time.Duration) float64 {
	if c.SlowStartWindow <= 0 || elapsed >= c.SlowStartWindow {
		return 1
	}
	timeFactor := max(elapsed, time.Second).Seconds() / c.SlowStartWindow.Seconds()
	f := max(c.MinWeightPercent/100, math.Pow(timeFactor, 1/c.Aggression))
	if !(f >= 0) { // NaN from an invalid config
		return 1
	}
	return min(f, 1)
}

// MarshalJSON returns c as the slowStartConfig object [ParseField] reads:
// the window as a proto3 JSON duration string ("30s", "0.5s"), the two
// numbers as JSON numbers. A valid Config parses back to itself.
func (c Config) MarshalJSON() ([]byte, error) {
	if math.IsNaN(c.Aggression) || math.IsInf(c.Aggression, 0) || math.IsNaN(c.MinWeightPercent) || math.IsInf(c.MinWeightPercent, 0) {
		return nil, fmt.Errorf("slowstart: cannot encode %+v: not a finite number", c)
	}
	return fmt.Appendf(nil, `{"slowStartWindow":%q,"aggression":%s,"minWeightPercent":%s}`,
		lb.FormatDuration(c.SlowStartWindow), strconv.FormatFloat(c.Aggression, 'g', -1, 64),
		strconv.FormatFloat(c.MinWeightPercent, 'g', -1, 64)), nil
}

// ParseField parses the slow start of a policy config: the object under
// "slowStartConfig" (or "slow_start_config") of obj. It returns nil when
// the field is absent or null (no slow start). An error is a
// [*lb.ConfigError] whose path starts with the field's name, such as
// "slowStartConfig.aggression". The object's unknown fields are obj's
// ([lb.ConfigObject.Unknown]).
func ParseField(obj lb.ConfigObject) (*Config, error) {
	raw, name, ok := obj.Raw("slowStartConfig", "slow_start_config")
	if !ok || isNull(raw) {
		return nil, nil
	}
	sub, err := obj.ObjectAt(name, raw)
	if err != nil {
		return nil, err
	}
	c, err := parseObject(sub)
	if err != nil {
		return nil, lb.PrefixConfigError(name, err)
	}
	return c, nil
}

// parseObject parses a slowStartConfig object.
func parseObject(obj lb.ConfigObject) (*Config, error) {
	c := &Config{Aggression: DefaultAggression, MinWeightPercent: DefaultMinWeightPercent}
	raw, name, ok := obj.Raw("slowStartWindow", "slow_start_window")
	if !ok || isNull(raw) {
		return nil, lb.ConfigErrorf("slowStartWindow", "required")
	}
	d, err := lb.ParseDuration(raw)
	if err != nil {
		return nil, lb.PrefixConfigError(name, err)
	}
	c.SlowStartWindow = d
	if err := floatField(obj, &c.Aggression, "aggression"); err != nil {
		return nil, err
	}
	if err := floatField(obj, &c.MinWeightPercent, "minWeightPercent", "min_weight_percent"); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// floatField parses a proto3 JSON double field into dst, leaving dst
// unchanged when it is absent or null: a JSON number, or a string holding
// a decimal number. NaN and infinities are rejected.
func floatField(obj lb.ConfigObject, dst *float64, names ...string) error {
	raw, name, ok := obj.Raw(names...)
	if !ok || isNull(raw) {
		return nil
	}
	raw = bytes.TrimSpace(raw)
	text := string(raw)
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return lb.ConfigErrorf(name, "want a number, got %s", raw)
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return lb.ConfigErrorf(name, "want a finite number, got %s", truncate(raw))
	}
	*dst = f
	return nil
}

// truncate shortens raw for an error message.
func truncate(raw []byte) string {
	if len(raw) > 40 {
		return fmt.Sprintf("%s…", raw[:40])
	}
	return string(raw)
}

// isNull reports whether raw is JSON null.
func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }
