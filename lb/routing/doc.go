// Package routing implements the xds_routing_experimental load-balancing
// policy of gRFC A28 ("xDS traffic splitting and routing",
// https://github.com/grpc/proposal/blob/master/A28-xds-traffic-splitting-and-routing.md):
// it routes each request, by its authority, method, path and headers, to
// a cluster (or splits requests over weighted clusters) and lets that
// cluster's child policy pick the backend. The package registers [Name] in
// its init function; that is its only side effect.
//
// # Configuration
//
// The config ([Config]) holds a route configuration (package
// [github.com/lbkit/lbkit/lb/route]) and one child policy per cluster the
// routes name. Addresses reach clusters by hierarchical path (package
// [github.com/lbkit/lbkit/lb/hierarchy]): each cluster gets the addresses
// whose path starts with its name, that element stripped.
//
// # Picking
//
// The picker builds a [route.Request] from the [lb.PickInfo] (Authority,
// HTTPMethod, Method as the path, Metadata as the headers) and finds its
// route ([route.Table.Find]). A route of one cluster delegates to that
// cluster's picker; a route of weighted clusters first chooses a cluster
// with the exact earliest-deadline-first scheduler of package
// [github.com/lbkit/lbkit/lb/edf]: in every run of W picks of the route (W
// the sum of the weights over their greatest common divisor g) a cluster
// of weight w is chosen exactly w/g times, whatever the clusters' states
// (gRFC A28: a routed request goes to its cluster, READY or not). A
// cluster that has published nothing yet queues the request; the request
// has used its turn in the split, and picks again, from the split, with
// the next picker. A request no route takes fails at once, even
// wait-for-ready. The route's timeout
// reaches the transport as [lb.PickResult].Timeout.
//
// # Request hashes
//
// A route with hash policies (gRFC A42, [route.HashPolicy]) is the source
// of the request's hash: the picker computes it ([route.Hasher]: request
// headers hashed with XXH64, optionally rewritten by a regex, and the
// channel's id for the io.grpc.channel_id filter state) and gives it to
// the cluster's picker in [lb.PickInfo].Hash, replacing any hash the
// caller set, so that a hash-based cluster policy (ring_hash_experimental,
// maglev_experimental) keeps each key on one endpoint. A request for which
// no policy gives a hash gets a random one (gRFC A42), drawn from the
// tree's seeded random source, so it goes to a random endpoint. The
// channel's id is drawn from the same source when the balancer is built.
// A route without hash policies passes the caller's hash on unchanged.
// Policy kinds A42 does not support (cookie, connection properties, query
// parameters) are accepted and give no hash.
//
// An update that keeps a split (same clusters, same weights) keeps its
// schedule; one that changes it starts a new schedule at a random point
// of its period, so a weight change takes effect with the next request.
//
// # State
//
// The policy's state is the aggregate of its clusters' ([lb.StateCounter]);
// its picker is the routing picker in every state.
//
// # Description
//
// Describe gives the node's routes ([lb.Node].Routes): each route's name,
// match and action, the requests it matched, and a mark on the route of
// the latest request. The picker counts each request in its route's
// counter with one atomic add (no lock, no allocation); an update keeps
// the count of a route equal to the previous config's route at the same
// position, and starts any other at 0.
//
// # Concurrency
//
// As every lbkit policy: the balancer's methods run serialized on its
// tree; Pick is safe for concurrent use, never blocks and allocates
// nothing of its own.
package routing
