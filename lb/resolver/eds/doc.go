// Package eds turns an Envoy ClusterLoadAssignment (the resource of Envoy's
// Endpoint Discovery Service) into the policy tree gRFC A27 and A56
// describe, without an xDS server: a priority_experimental policy whose
// children are weighted_target_experimental policies, one target per
// locality, whose leaves are weighted_round_robin over the endpoints. It
// also provides a resolver for "eds:///path/to/cla.json" that reads an
// assignment from a file and follows its changes.
//
// # Use
//
// To publish assignments you fetch yourself, parse each with [Parse] and
// convert it with one [Namer] kept for the stream of updates:
//
//	var n eds.Namer
//	cla, err := eds.Parse(data)
//	...
//	state, err := n.State(cla) // a resolver.State for the channel
//
// To read a file, dial "eds:///etc/lb/cla.json": importing this package
// registers the resolver ([Builder]).
//
// # Input
//
// [Parse] reads proto3 JSON. Every field may be written with its proto name
// (cluster_name) or its lowerCamelCase JSON name (clusterName), but not
// both; a key may not appear twice in an object; a null value is the same
// as an absent field. The document must be valid UTF-8 JSON. A field that the
// proto messages do not have (a misspelling such as "lb_endpoint", or a
// field newer than this package) is an error naming its path, as protojson
// makes it; [ParseOptions].IgnoreUnknownFields, or [WithIgnoreUnknownFields]
// for the resolver, ignores such fields instead. The fields used are:
//
//	cluster_name                      string, required, not empty
//	endpoints[]                       LocalityLbEndpoints
//	  locality{region,zone,sub_zone}  strings
//	  load_balancing_weight           UInt32Value (0 or unset: left out)
//	  priority                        uint32, 0..128
//	  lb_endpoints[]                  LbEndpoint
//	    health_status                 HealthStatus enum
//	    load_balancing_weight         UInt32Value, >= 1 when present
//	    endpoint.address.socket_address
//	      address                     IP literal or host name, required
//	      port_value                  uint32, 1..65535, required
//	      protocol                    "TCP" (or 0) only
//	policy.drop_overloads[]           DropOverload
//	  category                        string, required, not empty
//	  drop_percentage                 FractionalPercent
//	    numerator                     uint32 (above the denominator: 100%)
//	    denominator                   "HUNDRED" (default), "TEN_THOUSAND", "MILLION"
//
// A uint32 and a UInt32Value are a JSON number or a JSON string holding one
// ("3"), with no space around it; a fraction or an exponent is allowed when
// the value is an integer ("1e2" is 100, "3.0" is 3, "2.5" is an error); the
// value is from 0 to 4294967295 before the field's own range applies. An
// object such as {"value": 3} is not a UInt32Value's JSON form and is an
// error. An enum is its value's name, case-sensitive ("HEALTHY"), or its
// number (1); a string holding a number is not an enum. A field of the wrong
// JSON type is an error.
//
// An address is an IP literal (IPv6 without brackets, a zone allowed) or a
// host name: labels of letters, digits, '-' and '_', at most 63 bytes each,
// not beginning or ending with '-', at most 253 bytes in all, an optional
// final '.', the last label not all digits. The published address is
// "host:port" with the IP in canonical form (an IPv4-mapped IPv6 address
// unmapped) or the name in lower case, IPv6 in brackets.
//
// # Validation
//
// Besides the field rules above, [ClusterLoadAssignment.Validate] checks
// what Envoy and gRPC check across fields: priorities run from 0 without
// gaps (counting every locality, even one left out below), a locality
// appears once per priority, an address:port appears once in the whole
// assignment, and weights do not overflow uint32 when summed per priority
// (localities) or per locality (endpoints).
//
// # Errors
//
// Every error wraps an [*Error] whose Path is the JSON path of the
// offending value in proto field names, such as
// "endpoints[1].lb_endpoints[0].endpoint.address.socket_address.port_value".
// Path is empty only when the document as a whole is at fault: invalid
// JSON, invalid UTF-8, or a top-level value that is not an object.
//
// # Not supported
//
// These fields are rejected with an error saying so when they are set
// (an empty list or map, and a scalar's default value, count as not set):
//
//   - named_endpoints and lb_endpoints[].endpoint_name (named endpoints);
//   - policy.endpoint_stale_after, policy.weighted_priority_health:
//     gRPC's priority policy fails over on connectivity, and none of these
//     has an equivalent in the tree;
//   - endpoints[].load_balancer_endpoints and
//     endpoints[].leds_cluster_locality_config (LEDS);
//   - endpoint.additional_addresses;
//   - endpoint.address.pipe and endpoint.address.envoy_internal_address;
//   - socket_address.named_port, socket_address.resolver_name,
//     socket_address.network_namespace_filepath, and a protocol other than
//     TCP.
//
// These known fields are accepted and ignored, because they change neither
// which endpoints are used nor how traffic is split (gRPC ignores them
// too): policy.overprovisioning_factor (gRFC A27: gRPC's priority policy
// fails over on connectivity, not on overprovisioned health; it must still
// be a UInt32Value), metadata at every level, endpoints[].proximity,
// endpoint.hostname, endpoint.health_check_config and
// socket_address.ipv4_compat.
//
// # The tree
//
// An endpoint is used when its health_status is UNKNOWN (the default) or
// HEALTHY; UNHEALTHY, TIMEOUT and DEGRADED endpoints are left out (gRFC
// A27). A DRAINING endpoint stays beside the used endpoints of its
// locality, marked with package draining: the leaf policies give it no new
// request while another endpoint of the locality is READY, and its
// connection, with its requests in flight, is kept until it leaves the
// assignment (Envoy excludes draining hosts from load balancing of new
// requests in the same way). A locality without a load_balancing_weight
// (unset or 0, as gRPC ignores it), or left without UNKNOWN or HEALTHY endpoints (DRAINING ones do not
// count), is left out. A priority left without localities is
// dropped and the priorities after it move up, so the generated priorities
// stay contiguous and no child sits in TRANSIENT_FAILURE only for want of
// addresses; an assignment with nothing usable gives an empty address list
// and a config with no children, which the priority policy reports as
// TRANSIENT_FAILURE. The resolver logs what it leaves out at WARN, once per
// distinct content, and when nothing is left it publishes the empty state
// with the reason and the place in [resolver.State.Degraded], such as
// "priority 0 has no locality with a load_balancing_weight ...
// (endpoints[0] (locality "/a/", priority 0): no load_balancing_weight)";
// the priority policy fails picks with that reason after its own "empty
// priority list", from the first picker it publishes for the state.
//
// Each used endpoint becomes one address, in priority order, then document
// order, carrying:
//
//   - its hierarchy path (package hierarchy) [child name, locality name];
//   - its weight (package weight): load_balancing_weight, or 1 when unset;
//   - the draining mark (package draining) when its health_status is
//     DRAINING.
//
// The locality name is [Locality.Name]: "region/zone/sub_zone" with '%' and
// '/' inside a component percent-encoded, unique per locality and stable.
// The child names come from the [Namer] and stay stable across updates.
// The service config is
//
//	{"loadBalancingConfig":[{"priority_experimental":{
//	  "children":{"priority-0-0":{"config":[{"weighted_target_experimental":{
//	    "targets":{"us-east/us-east-1a/":{"weight":3,
//	      "childPolicy":[{"weighted_round_robin":{}}]}}}}]}},
//	  "priorities":["priority-0-0"]}}]}
//
// with one child per priority and one target per locality whose weight is
// the locality's load_balancing_weight. An assignment with drop_overloads
// (or [Policies] with MaxConcurrentRequests) has
// xds_cluster_impl_experimental (package clusterimpl) above the priority
// policy:
//
//	{"loadBalancingConfig":[{"xds_cluster_impl_experimental":{
//	  "cluster":"c","dropCategories":[{"category":"throttle","requestsPerMillion":100000}],
//	  "childPolicy":[{"priority_experimental":{...}}]}}]}
//
// which fails each category's share of the picks, in order, while the tree
// is READY, with an error naming the category (gRPC's cluster_impl does
// the same). The JSON is compact, with object
// keys sorted, so equal assignments give byte-identical configs.
//
// [Namer.Convert] takes [Policies] to change the tree below the priority
// policy: another endpoint policy, outlier_detection_experimental on top
// of each priority's child (gRFC A50), or, with Policies.Flat, no
// weighted_target_experimental layer at all, the endpoint policy taking
// all of a priority's endpoints (the path is then [child name]).
//
// A source that checks each assignment when it arrives and converts it
// later (the xDS client accepts or refuses it first) keeps the [Valid]
// that [Check] returns and converts it with [Namer.ConvertValid], which
// does not check it again.
//
// # Resolver
//
// The target is "eds:///absolute/path.json": the endpoint is the path of
// the file, with the authority empty ([resolver.ParseTarget] keeps the
// leading '/' for this scheme, as for unix). Relative paths, such as
// "eds:etc/cla.json", are rejected: a process's working directory is no
// reliable anchor for a channel. [Builder.ValidateTarget] also rejects an
// authority, an empty path, a path ending in '/' and a NUL byte.
//
// The resolver reads the file on its goroutine right after Build, then every
// poll interval ([DefaultPollInterval], 1 s, see [WithPollInterval]) on
// [resolver.BuildOptions].Clock, and at once on ResolveNow (requests made
// during a read coalesce; there is no rate limit, as a read is cheap). The
// next poll is one interval after the start of the previous read; its timer
// is made before the read, in one clock operation.
//
//   - Write the file atomically (write a temporary file, then rename it over
//     the old one): a read that sees a half-written file reports it as
//     invalid until the next poll.
//   - A poll that finds the same content (by SHA-256) as the previous read
//     does nothing. Changed content that yields the state already accepted
//     is not published again.
//   - Only a regular file is read: a FIFO, a device (eds:///dev/zero), a
//     directory or a socket is reported as an error wrapping
//     [ErrNotRegularFile], without reading a byte. A file over
//     [DefaultMaxFileSize] (128 MiB, see [WithMaxFileSize]) is reported as
//     an error wrapping [ErrFileTooLarge], without reading it whole.
//   - A file that cannot be read or holds an invalid assignment is reported
//     with the ClientConn's ReportError and nothing is published, so the
//     last good state stays in force. A poll reports the same read error or
//     the same invalid content once; ResolveNow reports it again.
//   - A state the channel rejects (UpdateState returns an error) is logged,
//     and published again on the next change of the file or ResolveNow.
//     The child names it used are forgotten, so the next state is named
//     against the last accepted one.
//
// # Lifecycle and concurrency
//
// A resolver runs one goroutine, which alone calls the ClientConn, and
// reads the file on a goroutine of its own. Close stops the polling and
// waits for the first goroutine, never for a read: a read that blocks (a
// hung network mount, a custom [ReadFileFunc]) is left to finish by itself
// and its result is dropped. So Close returns promptly whatever the file
// system does, and no ClientConn call happens after it returns; Close must
// not be called from inside the ClientConn's methods.
// ResolveNow never blocks; ResolveNow and Close are safe for concurrent use,
// and Close may be called more than once. Logs go to
// [resolver.BuildOptions].Logger.
//
// [Parse], [ClusterLoadAssignment.Validate] and [Locality.Name] are pure
// and safe for concurrent use; a [Namer] is not.
//
// # Registration
//
// Importing the package registers the zero [Builder] (the defaults) for
// [Scheme] with [resolver.Register]; that is its only side effect. Build a
// [Builder] with options ([NewBuilder]) to use other settings.
package eds
