// Package xds follows an xDS management server over ADS and registers the
// "xds" resolver scheme: "xds:///CLUSTER" resolves a cluster from its CDS
// and EDS resources into the same priority_experimental →
// weighted_target_experimental → endpoint-policy tree as the eds file
// resolver (package lb/resolver/eds), whose conversion it uses, so that a
// file and a control plane mean the same thing.
//
// # Configuration
//
// The bootstrap is gRPC's (gRFC A27): a JSON file named by
// GRPC_XDS_BOOTSTRAP, or the JSON itself in GRPC_XDS_BOOTSTRAP_CONFIG, read
// by [LoadBootstrap] for the zero [Builder]; or [ParseBootstrap] and
// [WithBootstrap] in code. [ParseCluster] maps a CDS Cluster to the tree's
// policies (lb_policy, load_balancing_policy as gRFC A52 lists it,
// outlier_detection); what lbkit cannot honour is NACKed with the field and
// the reason, and fields it ignores are listed in [ClusterConfig].Ignored.
// A cluster's circuit_breakers max_requests (1024 when unset, gRFC A32) and
// its assignment's drop_overloads put xds_cluster_impl_experimental
// (package lb/clusterimpl) on top of the tree; the resolvers of one
// cluster give their channels one counter of requests in flight, so the
// limit holds across the process.
//
// # Sharing
//
// One ADS client, with one gRPC connection and one stream, serves every
// resolver of the process built for the same management server, node,
// clock and options, by any [Builder] (a Builder with [WithDialOptions]
// shares only among its own resolvers). The first resolver opens it and the
// last one's Close closes it. Each resolver subscribes to its cluster and
// that cluster's endpoints; a resource watched by several resolvers is
// requested once.
//
// # Failures (gRFC A57)
//
// A resource the client cannot use is NACKed, naming every bad resource
// and field, and the last good value stays in use; the valid resources of
// the same response are used (gRFC A46). When the stream breaks, every
// resource keeps its value and channels keep serving; the client
// reconnects at once after a stream that had responses, else after gRPC's
// backoff. A resolver that has published a tree keeps it through NACKs and
// outages and logs them; one that has not reports the error to its
// channel, so picks fail with it rather than wait. A cluster or endpoints
// resource that does not exist (deleted by the server, or not sent within
// the resource timeout while the stream is up) becomes an empty tree whose
// reason ([resolver.State.Degraded]) every failed pick carries.
//
// # Goroutines and locks
//
// Each ADS client runs, while it is open: the stream loop (connects,
// receives, reconnects with backoff), one sender per live stream, the
// callback queue (which calls resolvers' watchers one at a time, in the
// order the client saw the events, never with the client's lock held), and
// grpc-go's goroutines of its connection. A resolver runs none of its own.
// Closing the last resolver of a client ends all of them before Close
// returns.
//
// Four mutexes guard shared state, always taken in this order when nested:
// a resolver's (its cluster, assignment and what it published), then the
// client's (resources, versions, nonces, watchers, stream health), then the
// callback queue's (pending callbacks); the process's client registry is
// taken alone, and so is a fifth, its registry of per-cluster counters of
// requests in flight. Watchers run on the callback queue's goroutine without the
// client's or the queue's lock, and take their resolver's.
//
// # Metrics
//
// [WithMetrics] records gRFC A78's XdsClient metrics ([MetricConnected] and
// the other Metric variables) per channel target; docs/observability.md
// describes them.
package xds
