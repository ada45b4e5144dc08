package conn

// The built-in resolvers and policies register themselves: a channel
// resolves "dns:", "passthrough:", "unix:", "unix-abstract:", "static:"
// and "eds:" targets, and runs pick_first, round_robin,
// least_request_experimental, peak_ewma_experimental,
// weighted_round_robin, ring_hash_experimental, priority_experimental,
// weighted_target_experimental, outlier_detection_experimental and
// xds_cluster_impl_experimental, with no further imports.
import (
	_ "github.com/lbkit/lbkit/lb/clusterimpl"
	_ "github.com/lbkit/lbkit/lb/consistenthash"
	_ "github.com/lbkit/lbkit/lb/leastrequest"
	_ "github.com/lbkit/lbkit/lb/outlierdetection"
	_ "github.com/lbkit/lbkit/lb/peakewma"
	_ "github.com/lbkit/lbkit/lb/pickfirst"
	_ "github.com/lbkit/lbkit/lb/priority"
	_ "github.com/lbkit/lbkit/lb/resolver/dns"
	_ "github.com/lbkit/lbkit/lb/resolver/eds"
	_ "github.com/lbkit/lbkit/lb/resolver/passthrough"
	_ "github.com/lbkit/lbkit/lb/resolver/static"
	_ "github.com/lbkit/lbkit/lb/resolver/unix"
	_ "github.com/lbkit/lbkit/lb/roundrobin"
	_ "github.com/lbkit/lbkit/lb/routing"
	_ "github.com/lbkit/lbkit/lb/weightedtarget"
	_ "github.com/lbkit/lbkit/lb/wrr"
)
