package eds

import (
	"errors"
	"fmt"
	"math"

	"github.com/lbkit/lbkit/lb/internal/jsonx"
)

// Parse reads a ClusterLoadAssignment in Envoy's proto3 JSON form and
// checks it with [ClusterLoadAssignment.Validate]. The package
// documentation lists the accepted fields and forms. A field the proto
// does not have is an error; [ParseOptions] can ignore such fields. Every
// error wraps an [*Error] naming the JSON path of the offending value.
func Parse(data []byte) (*ClusterLoadAssignment, error) {
	return ParseOptions{}.Parse(data)
}

// ParseOptions are the choices of [ParseOptions.Parse]. The zero value
// parses as [Parse] does.
type ParseOptions struct {
	// IgnoreUnknownFields makes fields that the proto messages do not
	// have (a misspelling, or a field newer than this package) ignored
	// instead of an error, as protojson's DiscardUnknown does.
	IgnoreUnknownFields bool
}

// Parse is [Parse] with the options o.
func (o ParseOptions) Parse(data []byte) (*ClusterLoadAssignment, error) {
	cla, err := o.parse(data)
	if err != nil {
		return nil, fmt.Errorf("eds: %w", err)
	}
	return cla, nil
}

// parser reads one document in a single pass.
type parser struct {
	d             *jsonx.Decoder
	ignoreUnknown bool
}

func (o ParseOptions) parse(data []byte) (*ClusterLoadAssignment, error) {
	p := parser{d: jsonx.New(data), ignoreUnknown: o.IgnoreUnknownFields}
	cla := &ClusterLoadAssignment{}
	err := p.clusterLoadAssignment(cla)
	if err == nil {
		err = p.d.End()
	}
	if err != nil {
		return nil, asError(syntaxFirst(data, err))
	}
	if err := cla.validate(); err != nil {
		return nil, err
	}
	return cla, nil
}

// syntaxFirst returns the syntax error of data, if it has one, in place of
// err: a document that is not JSON is reported as such, wherever the
// first error about a field came.
func syntaxFirst(data []byte, err error) error {
	var je *jsonx.Error
	if errors.As(err, &je) && je.Syntax {
		return err
	}
	d := jsonx.New(data)
	if serr := d.Skip(); serr != nil {
		if errors.As(serr, &je) && je.Syntax {
			return serr
		}
	} else if serr := d.End(); serr != nil {
		return serr
	}
	return err
}

// asError converts a decoding error into an [*Error].
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var je *jsonx.Error
	if errors.As(err, &je) {
		if je.Syntax {
			return &Error{Err: je}
		}
		return &Error{Path: je.Path, Err: je.Err}
	}
	return &Error{Err: err}
}

// field is a proto field: its proto name and its lowerCamelCase JSON name.
type field struct{ name, json string }

// message reads an object of the proto message whose fields are fields,
// calling fn with the index of each field set to a value other than null
// (null is the same as absent in proto3 JSON), its path named by the proto
// name. A field given under both names is an error; a key that names no
// field is an error unless the parser ignores unknown fields.
func (p *parser) message(fields []field, fn func(i int) error) error {
	var seen uint32
	return p.d.Object(func(key []byte) error {
		i := lookup(fields, key)
		if i < 0 {
			if p.ignoreUnknown {
				return p.d.Skip()
			}
			return p.d.Errorf("unknown field (set ParseOptions.IgnoreUnknownFields or WithIgnoreUnknownFields to ignore it)")
		}
		f := fields[i]
		p.d.SetKeyName(f.name)
		if seen&(1<<i) != 0 {
			return p.d.Errorf("given twice, as %q and as %q", f.name, f.json)
		}
		seen |= 1 << i
		if p.d.Null() {
			return nil
		}
		return fn(i)
	})
}

func lookup(fields []field, key []byte) int {
	for i, f := range fields {
		if string(key) == f.name || string(key) == f.json {
			return i
		}
	}
	return -1
}

var claFields = []field{{"cluster_name", "clusterName"}, {"endpoints", "endpoints"}, {"named_endpoints", "namedEndpoints"}, {"policy", "policy"}}

func (p *parser) clusterLoadAssignment(cla *ClusterLoadAssignment) error {
	return p.message(claFields, func(i int) error {
		var err error
		switch i {
		case 0:
			cla.ClusterName, err = p.str()
		case 1:
			err = p.d.Array(func(int) error {
				cla.Endpoints = append(cla.Endpoints, LocalityLbEndpoints{})
				return p.localityLbEndpoints(&cla.Endpoints[len(cla.Endpoints)-1])
			})
		case 2:
			err = p.reject(kindList, "named endpoints (lb_endpoints[].endpoint_name) are not implemented")
		case 3:
			err = p.policy(cla)
		}
		return err
	})
}

var policyFields = []field{{"drop_overloads", "dropOverloads"}, {"overprovisioning_factor", "overprovisioningFactor"}, {"endpoint_stale_after", "endpointStaleAfter"}, {"weighted_priority_health", "weightedPriorityHealth"}}

// policy reads ClusterLoadAssignment.Policy: drop_overloads into cla,
// overprovisioning_factor ignored, the other fields rejected when set.
func (p *parser) policy(cla *ClusterLoadAssignment) error {
	return p.message(policyFields, func(i int) error {
		switch i {
		case 0:
			return p.d.Array(func(int) error {
				cla.DropOverloads = append(cla.DropOverloads, DropOverload{})
				return p.dropOverload(&cla.DropOverloads[len(cla.DropOverloads)-1])
			})
		case 1:
			// Ignored (gRFC A27): gRPC's priority policy fails over on
			// connectivity, not on overprovisioned health. Its form is
			// still a UInt32Value's.
			_, err := p.uint32()
			return err
		case 2:
			return p.reject(kindMessage, "stale endpoints are not tracked")
		default:
			return p.reject(kindScalar, "health-weighted priority load is not implemented")
		}
	})
}

var (
	dropOverloadFields      = []field{{"category", "category"}, {"drop_percentage", "dropPercentage"}}
	fractionalPercentFields = []field{{"numerator", "numerator"}, {"denominator", "denominator"}}
)

// dropOverload reads one element of drop_overloads into out.
func (p *parser) dropOverload(out *DropOverload) error {
	return p.message(dropOverloadFields, func(i int) error {
		var err error
		if i == 0 {
			out.Category, err = p.str()
			return err
		}
		return p.message(fractionalPercentFields, func(i int) error {
			if i == 0 {
				out.DropPercentage.Numerator, err = p.uint32()
				return err
			}
			var d int
			d, err = p.enum(denominatorNames[:])
			out.DropPercentage.Denominator = Denominator(d)
			return err
		})
	})
}

var localityLbEndpointsFields = []field{
	{"locality", "locality"}, {"lb_endpoints", "lbEndpoints"}, {"load_balancing_weight", "loadBalancingWeight"},
	{"priority", "priority"}, {"load_balancer_endpoints", "loadBalancerEndpoints"},
	{"leds_cluster_locality_config", "ledsClusterLocalityConfig"}, {"metadata", "metadata"}, {"proximity", "proximity"},
}

func (p *parser) localityLbEndpoints(out *LocalityLbEndpoints) error {
	return p.message(localityLbEndpointsFields, func(i int) error {
		var err error
		switch i {
		case 0:
			out.Locality, err = p.locality()
		case 1:
			err = p.d.Array(func(int) error {
				out.LbEndpoints = append(out.LbEndpoints, LbEndpoint{})
				return p.lbEndpoint(&out.LbEndpoints[len(out.LbEndpoints)-1])
			})
		case 2:
			// A locality weight of 0 is accepted and means the same as
			// none: the locality is left out (gRFC A27, as grpc-go).
			out.LoadBalancingWeight, err = p.uint32()
		case 3:
			out.Priority, err = p.uint32()
		case 4:
			err = p.reject(kindMessage, "write the endpoints in lb_endpoints")
		case 5:
			err = p.reject(kindMessage, "LEDS is not implemented")
		default: // metadata, proximity: ignored
			err = p.d.Skip()
		}
		return err
	})
}

var localityFields = []field{{"region", "region"}, {"zone", "zone"}, {"sub_zone", "subZone"}}

func (p *parser) locality() (Locality, error) {
	var l Locality
	err := p.message(localityFields, func(i int) error {
		var err error
		switch i {
		case 0:
			l.Region, err = p.str()
		case 1:
			l.Zone, err = p.str()
		default:
			l.SubZone, err = p.str()
		}
		return err
	})
	return l, err
}

var lbEndpointFields = []field{{"endpoint", "endpoint"}, {"health_status", "healthStatus"}, {"load_balancing_weight", "loadBalancingWeight"}, {"endpoint_name", "endpointName"}, {"metadata", "metadata"}}

func (p *parser) lbEndpoint(out *LbEndpoint) error {
	found := false
	err := p.message(lbEndpointFields, func(i int) error {
		var err error
		switch i {
		case 0:
			found = true
			err = p.endpoint(out)
		case 1:
			var h int
			h, err = p.enum(healthNames[:])
			out.HealthStatus = HealthStatus(h)
		case 2:
			out.LoadBalancingWeight, err = p.weight()
		case 3:
			err = p.reject(kindMessage, "named endpoints are not implemented; give the endpoint inline")
		default:
			out.HashKey, err = p.hashKey()
		}
		return err
	})
	if err == nil && !found {
		err = p.d.FieldErrorf("endpoint", "required")
	}
	return err
}

var metadataFields = []field{{"filter_metadata", "filterMetadata"}, {"typed_filter_metadata", "typedFilterMetadata"}}

// hashKey reads an LbEndpoint's metadata (envoy.config.core.v3.Metadata)
// for gRFC A76's endpoint hash key: filter_metadata["envoy.lb"], a
// google.protobuf.Struct, field "hash_key" when it is a string (Envoy
// ignores a hash_key of another type, and so does lbkit). Everything else
// in the metadata is skipped: it is free-form by design.
func (p *parser) hashKey() (string, error) {
	var key string
	err := p.message(metadataFields, func(i int) error {
		if i == 1 {
			return p.d.Skip()
		}
		return p.d.Object(func(filter []byte) error {
			if string(filter) != "envoy.lb" {
				return p.d.Skip()
			}
			return p.d.Object(func(field []byte) error {
				if string(field) != "hash_key" || p.d.Peek() != jsonx.String {
					return p.d.Skip()
				}
				var err error
				key, err = p.d.String()
				return err
			})
		})
	})
	return key, err
}

var endpointFields = []field{{"address", "address"}, {"additional_addresses", "additionalAddresses"}, {"hostname", "hostname"}, {"health_check_config", "healthCheckConfig"}}

// endpoint reads Endpoint into out.
func (p *parser) endpoint(out *LbEndpoint) error {
	found := false
	err := p.message(endpointFields, func(i int) error {
		switch i {
		case 0:
			found = true
			return p.address(out)
		case 1:
			return p.reject(kindList, "additional addresses are not implemented")
		}
		return p.d.Skip()
	})
	if err == nil && !found {
		err = p.d.FieldErrorf("address", "required")
	}
	return err
}

var addressFields = []field{{"socket_address", "socketAddress"}, {"pipe", "pipe"}, {"envoy_internal_address", "envoyInternalAddress"}}

// address reads Address into out.
func (p *parser) address(out *LbEndpoint) error {
	found := false
	err := p.message(addressFields, func(i int) error {
		if i == 0 {
			found = true
			return p.socketAddress(out)
		}
		return p.reject(kindMessage, "only socket_address is supported")
	})
	if err == nil && !found {
		err = p.d.FieldErrorf("socket_address", "required")
	}
	return err
}

var socketAddressFields = []field{
	{"address", "address"}, {"port_value", "portValue"}, {"protocol", "protocol"}, {"named_port", "namedPort"},
	{"resolver_name", "resolverName"}, {"network_namespace_filepath", "networkNamespaceFilepath"}, {"ipv4_compat", "ipv4Compat"},
}

// socketAddress reads SocketAddress into out.
func (p *parser) socketAddress(out *LbEndpoint) error {
	var haveAddr, havePort bool
	err := p.message(socketAddressFields, func(i int) error {
		var err error
		switch i {
		case 0:
			haveAddr = true
			out.Address, err = p.str()
		case 1:
			havePort = true
			out.Port, err = p.uint32()
		case 2:
			var proto int
			if proto, err = p.enum([]string{"TCP", "UDP"}); err == nil && proto != 0 {
				err = p.d.Errorf("not supported: only TCP")
			}
		case 3:
			err = p.reject(kindMessage, "give the port in port_value")
		case 4:
			err = p.reject(kindScalar, "custom resolvers are not implemented")
		case 5:
			err = p.reject(kindScalar, "network namespaces are not implemented")
		default:
			err = p.d.Skip()
		}
		return err
	})
	switch {
	case err != nil:
		return err
	case !haveAddr:
		return p.d.FieldErrorf("address", "required")
	case !havePort:
		return p.d.FieldErrorf("port_value", "required")
	}
	return nil
}

// str reads a string.
func (p *parser) str() (string, error) { return p.d.String() }

// weight reads an optional google.protobuf.UInt32Value weight, which Envoy
// requires to be at least 1 when present.
func (p *parser) weight() (uint32, error) {
	w, err := p.uint32()
	if err == nil && w == 0 {
		err = p.d.Errorf("0 out of range: must be at least 1 when present")
	}
	return w, err
}

// uint32 reads a proto3 JSON uint32 (also the value of a
// google.protobuf.UInt32Value): a JSON number, or a JSON string holding
// one, whose value is an integer from 0 to 4294967295, as
// [jsonx.ParseIntegral] reads it.
func (p *parser) uint32() (uint32, error) {
	var lit string
	switch k := p.d.Peek(); k {
	case jsonx.Number:
		b, err := p.d.Number()
		if err != nil {
			return 0, err
		}
		lit = string(b)
	case jsonx.String:
		s, err := p.d.String()
		if err != nil {
			return 0, err
		}
		if !jsonx.IsNumber(s) {
			return 0, p.d.Errorf("string %q does not hold a number", s)
		}
		lit = s
	default:
		if k == jsonx.Invalid {
			return 0, p.d.Skip()
		}
		return 0, p.d.Errorf("want a number or a string holding a number, got %s", k)
	}
	v, err := jsonx.ParseIntegral(lit, math.MaxUint32)
	if err != nil {
		return 0, p.d.Errorf("%s: %v", lit, err)
	}
	return uint32(v), nil
}

// enum reads a proto3 JSON enum: the value's name as a string
// (case-sensitive), or its number as a JSON number.
func (p *parser) enum(names []string) (int, error) {
	switch k := p.d.Peek(); k {
	case jsonx.String:
		s, err := p.d.String()
		if err != nil {
			return 0, err
		}
		for i, n := range names {
			if n == s {
				return i, nil
			}
		}
		return 0, p.d.Errorf("unknown value %q (want one of %s)", s, joinNames(names))
	case jsonx.Number:
		b, err := p.d.Number()
		if err != nil {
			return 0, err
		}
		v, err := jsonx.ParseIntegral(string(b), math.MaxInt32)
		if err != nil {
			return 0, p.d.Errorf("%s: %v", b, err)
		}
		if v >= uint64(len(names)) {
			return 0, p.d.Errorf("unknown value %d (want 0 to %d)", v, len(names)-1)
		}
		return int(v), nil
	case jsonx.Invalid:
		return 0, p.d.Skip()
	default:
		return 0, p.d.Errorf("want an enum name string or number, got %s", k)
	}
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// fieldKind says which values of an unsupported field are still accepted
// because proto3 JSON gives them the same meaning as an absent field.
type fieldKind int

const (
	// kindMessage: any non-null value sets the field (or a oneof member).
	kindMessage fieldKind = iota
	// kindList: a repeated or map field; empty [] or {} is absent.
	kindList
	// kindScalar: a scalar without presence; its default ("", 0, false)
	// is absent.
	kindScalar
)

// reject reads the value of an unsupported field and returns an error,
// saying why it is not supported, unless the value means the field is
// not set.
func (p *parser) reject(kind fieldKind, why string) error {
	k := p.d.Peek()
	raw, err := p.d.Raw()
	if err != nil {
		return err
	}
	if isDefault(k, raw, kind) {
		return nil
	}
	return p.d.Errorf("not supported: %s", why)
}

// isDefault reports whether raw, a value of kind k, means the same as an
// absent field of the given kind.
func isDefault(k jsonx.Kind, raw []byte, kind fieldKind) bool {
	switch kind {
	case kindList:
		if k != jsonx.Array && k != jsonx.Object {
			return false
		}
		empty := true
		d := jsonx.New(raw)
		if k == jsonx.Array {
			_ = d.Array(func(int) error { empty = false; return nil })
		} else {
			_ = d.Object(func([]byte) error { empty = false; return nil })
		}
		return empty
	case kindScalar:
		switch k {
		case jsonx.String:
			return string(raw) == `""`
		case jsonx.Bool:
			return string(raw) == "false"
		case jsonx.Number:
			v, err := jsonx.ParseIntegral(string(raw), math.MaxUint64)
			return err == nil && v == 0
		}
	}
	return false
}
