package outlierdetection

import (
	"encoding/json"

	"github.com/lbkit/lbkit/lb"
)

// Policy is outlier_detection_experimental's config written in Go, an
// [lb.PolicyConfig]: it stands for the JSON object [Config] documents and
// is parsed by the same parser, so it is accepted and rejected as that
// JSON is, with the same error paths. A zero field is a field left out of
// the JSON and takes A50's default (the Default constants): a zero
// Interval is "10s", a zero MaxEjectionPercent is 10. The algorithms'
// structs work the same way (a zero StdevFactor is 1900), and a nil one
// leaves the algorithm off. ChildPolicy is required: nil is the parser's
// "childPolicy: required" error.
//
//	outlierdetection.Policy{
//		Detection: outlierdetection.Detection{
//			Interval:                  time.Second,
//			FailurePercentageEjection: &outlierdetection.FailurePercentageEjection{Threshold: 50, MinimumHosts: 3, RequestVolume: 10},
//		},
//		ChildPolicy: roundrobin.Config{},
//	}
//
// A Policy is a value: nothing that takes one changes it.
type Policy struct {
	// Detection holds how addresses are ejected; a zero field takes its
	// default.
	Detection
	// ChildPolicy is the policy delegated to ("childPolicy", a list of
	// this one policy).
	ChildPolicy lb.PolicyConfig
}

var _ lb.PolicyConfig = Policy{}

// PolicyName returns [Name].
func (Policy) PolicyName() string { return Name }

// MarshalJSON returns the JSON object p stands for: its non-zero fields
// under their JSON names, durations in proto3 JSON form.
func (p Policy) MarshalJSON() ([]byte, error) {
	child, err := lb.ChildPolicyJSON(p.ChildPolicy)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Interval                  string                     `json:"interval,omitempty"`
		BaseEjectionTime          string                     `json:"baseEjectionTime,omitempty"`
		MaxEjectionTime           string                     `json:"maxEjectionTime,omitempty"`
		MaxEjectionPercent        uint32                     `json:"maxEjectionPercent,omitempty"`
		SuccessRateEjection       *SuccessRateEjection       `json:"successRateEjection,omitempty"`
		FailurePercentageEjection *FailurePercentageEjection `json:"failurePercentageEjection,omitempty"`
		ChildPolicy               json.RawMessage            `json:"childPolicy,omitempty"`
	}{
		lb.FormatNonZeroDuration(p.Interval), lb.FormatNonZeroDuration(p.BaseEjectionTime), lb.FormatNonZeroDuration(p.MaxEjectionTime),
		p.MaxEjectionPercent, p.SuccessRateEjection, p.FailurePercentageEjection, child,
	})
}
