package outlierdetection

import "github.com/lbkit/lbkit/lb"

// The metrics the policy records; docs/observability.md describes each.
var (
	// MetricEjections counts outlier_detection ejections.
	MetricEjections = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.outlier_detection.ejections", Unit: "{ejection}",
		Description: "Number of addresses ejected as outliers.", Labels: []string{lb.LabelTarget}})
	// MetricUnejections counts outlier_detection un-ejections.
	MetricUnejections = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.outlier_detection.unejections", Unit: "{ejection}",
		Description: "Number of ejected addresses returned to service.", Labels: []string{lb.LabelTarget}})
)
