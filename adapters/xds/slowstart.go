package xds

import (
	"errors"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/slowstart"
)

// slowStartSource is either of Envoy's slow start messages: the Cluster's
// (round_robin_lb_config and least_request_lb_config) and the load
// balancing policies' (RoundRobin, LeastRequest); they have the same
// fields.
type slowStartSource interface {
	GetSlowStartWindow() *durationpb.Duration
	GetAggression() *corev3.RuntimeDouble
	GetMinWeightPercent() *typev3.Percent
}

// slowStart maps a slow_start_config set at field to lbkit's
// slowStartConfig object (package slowstart), with A100's field names:
//
//   - slow_start_window to slowStartWindow; unset or zero turns slow start
//     off, as in Envoy (the config is then nil, and listed in ignored);
//   - aggression.default_value to aggression (unset: 1); its runtime_key
//     is listed in ignored (lbkit has no runtime);
//   - min_weight_percent.value to minWeightPercent (unset: 10).
//
// A negative or invalid window, an aggression not above zero, and a
// percent outside [0, 100] are errors naming the field.
func slowStart(ssc slowStartSource, field string) (config string, ignored []string, _ *ResourceError) {
	window, err := durationJSON(ssc.GetSlowStartWindow(), field+".slow_start_window", false)
	if err != nil {
		return "", nil, err
	}
	if window == "" || ssc.GetSlowStartWindow().AsDuration() == 0 {
		return "", []string{field + ": ignored: no slow_start_window, so no slow start (as in Envoy)"}, nil
	}
	c := slowstart.Config{
		SlowStartWindow:  ssc.GetSlowStartWindow().AsDuration(),
		Aggression:       slowstart.DefaultAggression,
		MinWeightPercent: slowstart.DefaultMinWeightPercent,
	}
	if a := ssc.GetAggression(); a != nil {
		c.Aggression = a.GetDefaultValue()
		if a.GetRuntimeKey() != "" {
			ignored = append(ignored, field+".aggression.runtime_key: ignored (lbkit has no runtime): default_value is used")
		}
	}
	if p := ssc.GetMinWeightPercent(); p != nil {
		c.MinWeightPercent = p.GetValue()
	}
	if verr := c.Validate(); verr != nil {
		var ce *lb.ConfigError
		errors.As(verr, &ce)
		return "", nil, fieldErrorf(field+"."+protoField[ce.Path], "%v", ce.Err)
	}
	return `{"slowStartWindow":"` + window + `","aggression":` + number(c.Aggression) +
		`,"minWeightPercent":` + number(c.MinWeightPercent) + `}`, ignored, nil
}

// protoField names the xDS field of each slowstart.Config field, for
// errors.
var protoField = map[string]string{
	"slowStartWindow":  "slow_start_window",
	"aggression":       "aggression.default_value",
	"minWeightPercent": "min_weight_percent.value",
}

// number formats a finite float as JSON.
func number(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// withSlowStart returns config, a JSON object's text, with a
// "slowStartConfig" member set to ss when ss is not empty.
func withSlowStart(config, ss string) string {
	switch {
	case ss == "":
		return config
	case config == "{}":
		return `{"slowStartConfig":` + ss + `}`
	}
	return config[:len(config)-1] + `,"slowStartConfig":` + ss + `}`
}

// Both of Envoy's slow start messages are slow start sources.
var (
	_ slowStartSource = (*clusterv3.Cluster_SlowStartConfig)(nil)
	_ slowStartSource = (*commonv3.SlowStartConfig)(nil)
)
