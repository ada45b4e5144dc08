package eds

import (
	"fmt"
	"strconv"
	"strings"
)

// ClusterLoadAssignment is the part of Envoy's
// envoy.config.endpoint.v3.ClusterLoadAssignment that this package
// supports. [Parse] fills it from JSON; users who fetch assignments some
// other way may build one by hand and pass it to [Namer.State], which
// checks it with [ClusterLoadAssignment.Validate] first.
//
// In every weight field 0 means "not set". An endpoint's explicit 0 is
// rejected by [Parse], as Envoy and gRPC do; a locality's explicit 0 is
// accepted and, like an unset weight, leaves the locality out of the tree,
// as gRPC does.
type ClusterLoadAssignment struct {
	// ClusterName is cluster_name. It must not be empty.
	ClusterName string
	// Endpoints is endpoints: one entry per locality and priority, in the
	// document's order.
	Endpoints []LocalityLbEndpoints
	// DropOverloads is policy.drop_overloads, in the document's order:
	// each category drops its share of the requests that reach it, one
	// after the other (the tree's xds_cluster_impl_experimental policy,
	// package clusterimpl, applies them at pick time).
	DropOverloads []DropOverload
}

// DropOverload is one element of policy.drop_overloads.
type DropOverload struct {
	// Category is category: the drop's name in errors and metrics, not
	// empty.
	Category string
	// DropPercentage is drop_percentage; unset is 0%.
	DropPercentage FractionalPercent
}

// FractionalPercent is envoy.type.v3.FractionalPercent.
type FractionalPercent struct {
	// Numerator is numerator.
	Numerator uint32
	// Denominator is denominator.
	Denominator Denominator
}

// PerMillion returns the share in requests per million, at most 1,000,000:
// a numerator above the denominator is 100%, as the proto says.
func (f FractionalPercent) PerMillion() uint32 {
	scale := uint64(1)
	switch f.Denominator {
	case DenominatorHundred:
		scale = 10000
	case DenominatorTenThousand:
		scale = 100
	}
	return uint32(min(uint64(f.Numerator)*scale, 1_000_000))
}

// Denominator is envoy.type.v3.FractionalPercent.DenominatorType.
type Denominator int32

// The denominators.
const (
	DenominatorHundred     Denominator = 0
	DenominatorTenThousand Denominator = 1
	DenominatorMillion     Denominator = 2
)

var denominatorNames = [...]string{"HUNDRED", "TEN_THOUSAND", "MILLION"}

// String returns the denominator's proto name, such as "HUNDRED", or
// "Denominator(7)" for a value outside the enum.
func (d Denominator) String() string {
	if d >= 0 && int(d) < len(denominatorNames) {
		return denominatorNames[d]
	}
	return "Denominator(" + strconv.Itoa(int(d)) + ")"
}

// LocalityLbEndpoints is one element of endpoints: the endpoints of one
// locality at one priority.
type LocalityLbEndpoints struct {
	// Locality is locality.
	Locality Locality
	// LbEndpoints is lb_endpoints, in the document's order.
	LbEndpoints []LbEndpoint
	// LoadBalancingWeight is the locality's load_balancing_weight; 0 means
	// not set or set to 0, and such a locality is left out of the tree
	// (gRFC A27; grpc-go ignores it too).
	LoadBalancingWeight uint32
	// Priority is priority, 0 being the highest. At most [MaxPriority].
	Priority uint32
}

// MaxPriority is the largest priority Envoy accepts.
const MaxPriority = 128

// Locality is envoy.config.core.v3.Locality. Two localities are the same
// locality when all three fields are equal.
type Locality struct {
	// Region is region.
	Region string
	// Zone is zone.
	Zone string
	// SubZone is sub_zone.
	SubZone string
}

// Name returns the locality's name in the generated tree: region, zone and
// sub_zone joined with '/', with every '%' in them written "%25" and every
// '/' written "%2F". So {"region":"us","zone":"us-a"} is "us/us-a/", and the
// empty locality is "//". Distinct localities have distinct names, and a
// locality's name never changes.
func (l Locality) Name() string {
	return escapeComponent(l.Region) + "/" + escapeComponent(l.Zone) + "/" + escapeComponent(l.SubZone)
}

func escapeComponent(s string) string {
	if !strings.ContainsAny(s, "%/") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			b.WriteString("%25")
		case '/':
			b.WriteString("%2F")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// LbEndpoint is one element of lb_endpoints, with its
// endpoint.address.socket_address flattened.
type LbEndpoint struct {
	// Address is endpoint.address.socket_address.address: an IP literal
	// (an IPv6 zone is allowed) or a host name.
	Address string
	// Port is endpoint.address.socket_address.port_value, 1 to 65535.
	Port uint32
	// HealthStatus is health_status.
	HealthStatus HealthStatus
	// LoadBalancingWeight is the endpoint's load_balancing_weight; 0 means
	// not set, which counts as 1.
	LoadBalancingWeight uint32
	// HashKey is metadata.filter_metadata["envoy.lb"].hash_key, gRFC A76's
	// endpoint hash key; "" when unset. It reaches the address as its
	// lb/hashkey attribute.
	HashKey string
}

// HealthStatus is envoy.config.core.v3.HealthStatus.
type HealthStatus int32

// The health statuses. Only [HealthUnknown] and [HealthHealthy] endpoints
// are used (gRFC A27); the others are left out of the tree.
const (
	HealthUnknown   HealthStatus = 0
	HealthHealthy   HealthStatus = 1
	HealthUnhealthy HealthStatus = 2
	HealthDraining  HealthStatus = 3
	HealthTimeout   HealthStatus = 4
	HealthDegraded  HealthStatus = 5
)

var healthNames = [...]string{"UNKNOWN", "HEALTHY", "UNHEALTHY", "DRAINING", "TIMEOUT", "DEGRADED"}

// String returns the status's proto name, such as "HEALTHY", or
// "HealthStatus(9)" for a value outside the enum.
func (h HealthStatus) String() string {
	if h >= 0 && int(h) < len(healthNames) {
		return healthNames[h]
	}
	return "HealthStatus(" + strconv.Itoa(int(h)) + ")"
}

// Usable reports whether an endpoint with this status receives traffic:
// true for UNKNOWN and HEALTHY only, as gRFC A27 says.
func (h HealthStatus) Usable() bool { return h == HealthUnknown || h == HealthHealthy }

func (h HealthStatus) valid() bool { return h >= 0 && int(h) < len(healthNames) }

// Error is an error in a ClusterLoadAssignment, located by its JSON path,
// such as
//
//	endpoints[1].lb_endpoints[0].endpoint.address.socket_address.port_value: 70000 out of range 1..65535
//
// Paths always use the proto field names (snake_case), also when the
// document used the lowerCamelCase JSON names, so that one path names one
// field whatever the spelling. A key that is not a plain name (a duplicate
// or misplaced key such as "" or "a.b") appears quoted in brackets:
// policy["a.b"]. Path is empty only for errors about the document as a whole:
// invalid JSON, invalid UTF-8, or a top-level value that is not an object.
type Error struct {
	// Path locates the offending value; empty means the whole document.
	Path string
	// Err is the reason.
	Err error
}

// Error returns "path: reason", or the reason alone when Path is empty.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Err }

func errorf(path, format string, args ...any) *Error {
	return &Error{Path: path, Err: fmt.Errorf(format, args...)}
}

// join appends a field name to a path.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// index appends an array index to a path.
func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
