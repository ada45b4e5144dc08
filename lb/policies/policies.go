// Package policies imports every built-in load-balancing policy of lbkit,
// so that each registers itself in [lb.DefaultRegistry]: pick_first,
// round_robin, least_request_experimental, peak_ewma_experimental,
// weighted_round_robin, ring_hash_experimental, maglev_experimental,
// priority_experimental, weighted_target_experimental,
// outlier_detection_experimental, xds_cluster_impl_experimental and
// xds_routing_experimental.
//
// It has no API: import it for its side effects,
//
//	import _ "github.com/lbkit/lbkit/lb/policies"
//
// as package conn (for channels) and package sim (for the simulator) do;
// this list is the one place that names them all. The registrations run
// in the policies' init functions, before main, and are safe to read from
// any goroutine afterwards.
package policies

import (
	_ "github.com/lbkit/lbkit/lb/clusterimpl"
	_ "github.com/lbkit/lbkit/lb/consistenthash"
	_ "github.com/lbkit/lbkit/lb/leastrequest"
	_ "github.com/lbkit/lbkit/lb/outlierdetection"
	_ "github.com/lbkit/lbkit/lb/peakewma"
	_ "github.com/lbkit/lbkit/lb/pickfirst"
	_ "github.com/lbkit/lbkit/lb/priority"
	_ "github.com/lbkit/lbkit/lb/roundrobin"
	_ "github.com/lbkit/lbkit/lb/routing"
	_ "github.com/lbkit/lbkit/lb/weightedtarget"
	_ "github.com/lbkit/lbkit/lb/wrr"
)
