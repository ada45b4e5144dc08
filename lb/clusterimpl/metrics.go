package clusterimpl

import "github.com/lbkit/lbkit/lb"

// The metrics the policy records; docs/observability.md describes each.
var (
	// MetricDrops counts picks dropped by a drop category.
	MetricDrops = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.cluster_impl.drops", Unit: "{pick}",
		Description: "Picks dropped by the cluster's drop_overloads, per category.",
		Labels:      []string{lb.LabelTarget, lb.LabelCluster, lb.LabelDropCategory}})
	// MetricCircuitBreakerDrops counts picks failed because the cluster
	// had its maximum of requests in flight.
	MetricCircuitBreakerDrops = lb.RegisterMetric(&lb.MetricDesc{Name: "lbkit.cluster_impl.circuit_breaker_drops", Unit: "{pick}",
		Description: "Picks failed because the cluster had maxConcurrentRequests requests in flight (circuit_breakers max_requests).",
		Labels:      []string{lb.LabelTarget, lb.LabelCluster}})
)
