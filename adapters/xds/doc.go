// Package xds follows an xDS management server over ADS and registers two
// resolver schemes:
//
//   - "xds:///LISTENER" follows a listener as gRPC does (gRFC A27, A28):
//     its HttpConnectionManager, the route configuration it holds inline
//     or names (RDS), and every cluster the routes name. The resolver
//     publishes one xds_routing_experimental tree (package lb/routing):
//     its config is the routes and, for each cluster, the cluster's tree as
//     its child policy; its addresses are the clusters', under their
//     cluster's name (hierarchical paths). Each request is routed by its
//     authority, path, method and headers (in adapters/nethttp, the
//     request's), to one cluster or split exactly over weighted clusters.
//     The listener's name is the bootstrap's
//     client_default_listener_resource_name_template with "%s" replaced by
//     LISTENER (LISTENER itself by default): with Istio,
//     "xds:///reviews.default.svc.cluster.local:9080".
//   - "xds-cluster:///CLUSTER" ([ClusterScheme]) follows one cluster,
//     without routing.
//
// A cluster's CDS and EDS resources make the same priority_experimental →
// weighted_target_experimental → endpoint-policy tree as the eds file
// resolver (package lb/resolver/eds), whose conversion it uses, so that a
// file and a control plane mean the same thing.
//
// # Listeners and routes
//
// A listener's route table is published once every cluster it names has
// its tree, or has failed (a cluster that does not exist, whose endpoints
// do not exist, or whose first resource was NACKed): such a cluster's
// child gets an empty tree whose reason fails the requests routed to it,
// and only those. Until then the routing published before stays in use.
// Clusters the routing no longer names are unsubscribed after the update
// that dropped them is published. A listener or route configuration that
// does not exist publishes a state that fails every request with the
// reason. Each cluster counts its requests in flight in its
// process-wide counter (gRFC A32), whichever resolver follows it.
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
// # Aggregate and LOGICAL_DNS clusters
//
// The cluster may be a LOGICAL_DNS cluster, whose load_assignment names the
// host:port that package lb/resolver/dns resolves ([WithDNS]), or an
// aggregate cluster (gRFC A37), whose clusters, EDS, LOGICAL_DNS or
// aggregate again, the resolver watches in turn. It walks the graph depth
// first, each leaf cluster listed where first reached (loops and repeats add
// nothing, more than 16 levels is an error naming the cluster), publishes
// nothing until every cluster is known, and publishes one
// priority_experimental whose priorities are the leaves' in order, each
// under its own cluster's xds_cluster_impl_experimental and counter: a leaf
// without endpoints lets traffic fail over to the next. docs/choices.md
// ("xDS aggregate and LOGICAL_DNS clusters") says where lbkit chooses.
//
// # Sharing
//
// One ADS client, with one gRPC connection and one stream, serves every
// resolver of the process built for the same management server, node,
// clock and options, by any [Builder] (a Builder with [WithDialOptions]
// shares only among its own resolvers). The first resolver opens it and the
// last one's Close closes it. Each resolver subscribes to its listener,
// route configuration, clusters and their endpoints; a resource watched by
// several resolvers is requested once. A bootstrap with more than one server gives each
// channel target a client of its own (gRFC A71, below).
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
// # Fallback (gRFC A71)
//
// The bootstrap's servers are used in order. While the servers before it
// cannot be reached and a watched resource is neither received nor known
// not to exist, the client also streams to the next server and uses its
// resources; it keeps reconnecting to the earlier ones and goes back to
// the first that answers, closing the streams after it. Watchers hear of
// a connectivity failure only when no server can serve.
//
// # Goroutines and locks
//
// Each ADS client has one [lb.Serializer] (the shape of grpc-go's xDS
// authority): the resource cache, versions, nonces, NACK state, watchers,
// the streams' state, the does-not-exist and reconnection timers (on the
// injected clock), the metrics it records, and the state of every resolver
// using the client are owned by it, and the resolvers' watchers run inside
// it, publishing straight to their channels. No lock of this package
// guards any of that.
//
// Goroutines, while a client is open: per stream (one, or one per server
// in use during a fallback), its receiver (it dials, then hands each
// response to the serializer) and, once the stream is made, its sender
// (it sends the requests the serializer builds); the serializer's own,
// only while it has work; and grpc-go's goroutines of the stream's
// connection. A resolver runs none of its own. Closing the last resolver
// of a client ends all of them before Close returns.
//
// Locks: two, each taken alone: the process's client registry (which
// resolvers share which client) and its registry of per-cluster counters
// of requests in flight. A resolver's Close waits on the serializer for a
// callback that is running; Describe reads copies the serializer
// publishes and never waits.
//
// # Metrics
//
// [WithMetrics] records gRFC A78's XdsClient metrics ([MetricConnected] and
// the other Metric variables) per channel target; docs/observability.md
// describes them.
package xds
