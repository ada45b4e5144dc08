package outlierdetection

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// The defaults of gRFC A50's OutlierDetectionLoadBalancingConfig, used for
// fields the JSON leaves out.
const (
	DefaultInterval           = 10 * time.Second
	DefaultBaseEjectionTime   = 30 * time.Second
	DefaultMaxEjectionTime    = 300 * time.Second
	DefaultMaxEjectionPercent = 10

	DefaultStdevFactor                      = 1900
	DefaultSuccessRateEnforcementPercentage = 100
	DefaultSuccessRateMinimumHosts          = 5
	DefaultSuccessRateRequestVolume         = 100

	DefaultFailurePercentageThreshold             = 85
	DefaultFailurePercentageEnforcementPercentage = 100
	DefaultFailurePercentageMinimumHosts          = 5
	DefaultFailurePercentageRequestVolume         = 50
)

// Config is the parsed config of an outlier_detection_experimental balancer,
// gRFC A50's OutlierDetectionLoadBalancingConfig in grpc-go's JSON form:
//
//	{
//	  "interval": "10s",
//	  "baseEjectionTime": "30s",
//	  "maxEjectionTime": "300s",
//	  "maxEjectionPercent": 10,
//	  "successRateEjection": {
//	    "stdevFactor": 1900, "enforcementPercentage": 100,
//	    "minimumHosts": 5, "requestVolume": 100
//	  },
//	  "failurePercentageEjection": {
//	    "threshold": 85, "enforcementPercentage": 100,
//	    "minimumHosts": 5, "requestVolume": 50
//	  },
//	  "childPolicy": [{"round_robin": {}}]
//	}
//
// Durations are proto3 JSON strings ("10s", "0.5s"); numbers are proto3 JSON
// uint32 values. Each field's snake_case twin ("base_ejection_time") is
// accepted too, as proto3 JSON allows. A missing field takes A50's default
// (the Default constants); a missing or null successRateEjection or
// failurePercentageEjection disables that algorithm, and an empty object
// enables it with its defaults. Unknown fields are ignored. The parser
// rejects, naming the JSON path:
//
//   - a duration that is not a proto3 JSON duration, is negative, is beyond
//     google.protobuf.Duration's range or overflows a Go time.Duration
//     (baseEjectionTime: ...);
//   - an interval of zero (see below);
//   - maxEjectionPercent, either enforcementPercentage or
//     failurePercentageEjection.threshold above 100;
//   - a childPolicy that is missing, empty, or whose first registered
//     policy's config is invalid (childPolicy[0].pick_first...).
//
// A50 allows an interval of zero; lbkit rejects it, as Envoy's
// OutlierDetection proto does (interval must be greater than zero): a
// zero-period sweep would run forever without letting time pass.
//
// A Config is immutable once parsed; balancers never change it.
type Config struct {
	// Detection holds how addresses are ejected, every field with its
	// value (a default filled in where the JSON left it out).
	Detection
	// ChildPolicy is the policy the balancer delegates to.
	ChildPolicy *lb.ParsedPolicy
}

// Detection is how outlier detection ejects addresses: gRFC A50's fields
// but the child policy, shared by the parsed [Config] and the typed
// [Policy]. In a Config every field holds its value; in a Policy a zero
// field is left out of the JSON and takes its default (a nil algorithm
// stays off).
type Detection struct {
	// Interval is the time between ejection sweeps ("interval").
	Interval time.Duration
	// BaseEjectionTime is how long an address is ejected for, multiplied
	// by the number of times it has been ejected in a row
	// ("baseEjectionTime").
	BaseEjectionTime time.Duration
	// MaxEjectionTime caps the ejection time; the cap is the larger of
	// MaxEjectionTime and BaseEjectionTime ("maxEjectionTime").
	MaxEjectionTime time.Duration
	// MaxEjectionPercent is the largest share of addresses (in percent)
	// that may be ejected at once; one address may always be ejected
	// ("maxEjectionPercent").
	MaxEjectionPercent uint32
	// SuccessRateEjection enables and configures the success-rate
	// algorithm; nil disables it ("successRateEjection").
	SuccessRateEjection *SuccessRateEjection
	// FailurePercentageEjection enables and configures the
	// failure-percentage algorithm; nil disables it
	// ("failurePercentageEjection").
	FailurePercentageEjection *FailurePercentageEjection
}

// SuccessRateEjection configures the success-rate algorithm. In a parsed
// [Config] every field holds its value; in a [Policy] a zero field is left
// out of the JSON and takes its default.
type SuccessRateEjection struct {
	// StdevFactor, divided by 1000, is how many standard deviations below
	// the mean success rate an address must be to be an outlier.
	StdevFactor uint32 `json:"stdevFactor,omitempty"`
	// EnforcementPercentage is the chance, in percent, that an outlier is
	// ejected.
	EnforcementPercentage uint32 `json:"enforcementPercentage,omitempty"`
	// MinimumHosts is how many addresses must have RequestVolume calls in
	// an interval for the algorithm to run.
	MinimumHosts uint32 `json:"minimumHosts,omitempty"`
	// RequestVolume is how many calls an address needs in an interval to
	// be considered.
	RequestVolume uint32 `json:"requestVolume,omitempty"`
}

// FailurePercentageEjection configures the failure-percentage algorithm.
// In a parsed [Config] every field holds its value; in a [Policy] a zero
// field is left out of the JSON and takes its default.
type FailurePercentageEjection struct {
	// Threshold is the failure percentage above which an address is an
	// outlier.
	Threshold uint32 `json:"threshold,omitempty"`
	// EnforcementPercentage is the chance, in percent, that an outlier is
	// ejected.
	EnforcementPercentage uint32 `json:"enforcementPercentage,omitempty"`
	// MinimumHosts is how many addresses must have RequestVolume calls in
	// an interval for the algorithm to run.
	MinimumHosts uint32 `json:"minimumHosts,omitempty"`
	// RequestVolume is how many calls an address needs in an interval to
	// be considered.
	RequestVolume uint32 `json:"requestVolume,omitempty"`
}

// enabled reports whether at least one algorithm is configured: only then
// are calls counted and the sweep timer run.
func (c *Config) enabled() bool {
	return c.SuccessRateEjection != nil || c.FailurePercentageEjection != nil
}

// maxEjectionTime is the cap on an ejection's length: the larger of
// MaxEjectionTime and BaseEjectionTime.
func (c *Config) maxEjectionTime() time.Duration { return max(c.MaxEjectionTime, c.BaseEjectionTime) }

// errNoChildPolicy is the reason given for a missing childPolicy.
var errNoChildPolicy = errors.New("required: the child policy to delegate to")

// ReadConfig reads a [*Config] from obj; the child policy list is parsed
// against reg (nil: [lb.DefaultRegistry]).
func (policy) ReadConfig(obj lb.ConfigObject, reg *lb.Registry) (lb.Config, error) {
	cfg := &Config{}
	durations := []struct {
		dst      *time.Duration
		def      time.Duration
		names    []string
		positive bool
	}{
		{&cfg.Interval, DefaultInterval, []string{"interval"}, true},
		{&cfg.BaseEjectionTime, DefaultBaseEjectionTime, []string{"baseEjectionTime", "base_ejection_time"}, false},
		{&cfg.MaxEjectionTime, DefaultMaxEjectionTime, []string{"maxEjectionTime", "max_ejection_time"}, false},
	}
	var err error
	for _, d := range durations {
		if *d.dst, err = durationField(obj, d.def, d.positive, d.names...); err != nil {
			return nil, err
		}
	}
	if cfg.MaxEjectionPercent, err = uint32Field(obj, DefaultMaxEjectionPercent, 100, "maxEjectionPercent", "max_ejection_percent"); err != nil {
		return nil, err
	}
	if cfg.SuccessRateEjection, err = parseSuccessRate(obj); err != nil {
		return nil, err
	}
	if cfg.FailurePercentageEjection, err = parseFailurePercentage(obj); err != nil {
		return nil, err
	}
	if _, _, ok := obj.Raw("childPolicy", "child_policy"); !ok {
		return nil, &lb.ConfigError{Path: "childPolicy", Err: errNoChildPolicy}
	}
	if cfg.ChildPolicy, err = obj.PolicyList(reg, "childPolicy", "child_policy"); err != nil {
		return nil, err
	}
	return cfg, nil
}

func parseSuccessRate(obj lb.ConfigObject) (*SuccessRateEjection, error) {
	return parseAlgorithm(obj, func(sr *SuccessRateEjection) []uint32Spec {
		return []uint32Spec{
			{&sr.StdevFactor, DefaultStdevFactor, 0, []string{"stdevFactor", "stdev_factor"}},
			{&sr.EnforcementPercentage, DefaultSuccessRateEnforcementPercentage, 100, []string{"enforcementPercentage", "enforcement_percentage"}},
			{&sr.MinimumHosts, DefaultSuccessRateMinimumHosts, 0, []string{"minimumHosts", "minimum_hosts"}},
			{&sr.RequestVolume, DefaultSuccessRateRequestVolume, 0, []string{"requestVolume", "request_volume"}},
		}
	}, "successRateEjection", "success_rate_ejection")
}

func parseFailurePercentage(obj lb.ConfigObject) (*FailurePercentageEjection, error) {
	return parseAlgorithm(obj, func(fp *FailurePercentageEjection) []uint32Spec {
		return []uint32Spec{
			{&fp.Threshold, DefaultFailurePercentageThreshold, 100, []string{"threshold"}},
			{&fp.EnforcementPercentage, DefaultFailurePercentageEnforcementPercentage, 100, []string{"enforcementPercentage", "enforcement_percentage"}},
			{&fp.MinimumHosts, DefaultFailurePercentageMinimumHosts, 0, []string{"minimumHosts", "minimum_hosts"}},
			{&fp.RequestVolume, DefaultFailurePercentageRequestVolume, 0, []string{"requestVolume", "request_volume"}},
		}
	}, "failurePercentageEjection", "failure_percentage_ejection")
}

// parseAlgorithm parses an algorithm's object, found under the first
// present name: nil when it is missing or null, else a new T whose fields
// (given by fields) are parsed from it. The fields of the algorithm's
// object it does not know are obj's ([lb.ConfigObject.ObjectAt]).
func parseAlgorithm[T any](obj lb.ConfigObject, fields func(*T) []uint32Spec, names ...string) (*T, error) {
	raw, name, ok := obj.Raw(names...)
	if !ok || isNull(raw) {
		return nil, nil
	}
	sub, err := obj.ObjectAt(name, raw)
	if err != nil {
		return nil, err
	}
	v := new(T)
	for _, f := range fields(v) {
		if *f.dst, err = uint32Field(sub, f.def, f.highest, f.names...); err != nil {
			return nil, lb.PrefixConfigError(name, err)
		}
	}
	return v, nil
}

// uint32Spec describes one uint32 field: where it goes, its default, its
// largest allowed value (0: no limit beyond uint32) and its names.
type uint32Spec struct {
	dst     *uint32
	def     uint32
	highest uint32
	names   []string
}

// uint32Field parses a google.protobuf.UInt32Value field: missing or null
// is def; highest, when not 0, is the largest value allowed.
func uint32Field(obj lb.ConfigObject, def, highest uint32, names ...string) (uint32, error) {
	raw, name, ok := obj.Raw(names...)
	if !ok || isNull(raw) {
		return def, nil
	}
	v, err := lb.ParseUint32(raw, 0)
	if err != nil {
		return 0, lb.PrefixConfigError(name, err)
	}
	if highest != 0 && v > highest {
		return 0, lb.ConfigErrorf(name, "must be <= %d, got %d", highest, v)
	}
	return v, nil
}

// durationField parses a google.protobuf.Duration field: missing or null is
// def; the value must not be negative, and not zero when positive is set.
func durationField(obj lb.ConfigObject, def time.Duration, positive bool, names ...string) (time.Duration, error) {
	raw, name, ok := obj.Raw(names...)
	if !ok || isNull(raw) {
		return def, nil
	}
	d, err := lb.ParseDuration(raw)
	switch {
	case err != nil:
		return 0, lb.PrefixConfigError(name, err)
	case d < 0:
		return 0, lb.ConfigErrorf(name, "must not be negative, got %s", raw)
	case d == 0 && positive:
		return 0, lb.ConfigErrorf(name, "must be greater than zero")
	}
	return d, nil
}

// validate checks what the balancer relies on, for a Config built by hand
// rather than parsed.
func (c *Config) validate() error {
	switch {
	case c.ChildPolicy == nil || c.ChildPolicy.Builder == nil:
		return errors.New("outlierdetection: invalid config: no child policy")
	case c.Interval <= 0:
		return fmt.Errorf("outlierdetection: invalid config: interval %v, want > 0", c.Interval)
	case c.BaseEjectionTime < 0 || c.MaxEjectionTime < 0:
		return errors.New("outlierdetection: invalid config: negative ejection time")
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }
