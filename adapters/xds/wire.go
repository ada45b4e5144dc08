package xds

import (
	"math"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// readAssignment reads the common form of an encoded
// ClusterLoadAssignment straight into the eds model, without the protobuf
// messages proto.Unmarshal builds (seven allocations per endpoint): a
// name, localities with a locality, weight and priority, and endpoints
// with a socket address, a port_value, a health status and a weight (and
// the fields convertAssignment ignores: proximity, hostname, ipv4_compat). It
// reports false for anything else: another field, a field given twice, a
// value [convertAssignment] would refuse or that protobuf would not read
// as written (an invalid string, a number out of its type's range), an
// encoding error. Then the caller takes the general path, protobuf and
// convertAssignment; when it reports true, the result is the one
// convertAssignment would give before validation
// (TestPropertyReadAssignmentAgreesWithConvert).
func readAssignment(raw []byte) (*eds.ClusterLoadAssignment, bool) {
	cla := &eds.ClusterLoadAssignment{}
	n, ok := count(raw, 2)
	if !ok {
		return nil, false
	}
	if n > 0 {
		cla.Endpoints = make([]eds.LocalityLbEndpoints, 0, n)
	}
	var named bool
	ok = fields(raw, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
		switch {
		case num == 1 && typ == protowire.BytesType && !named:
			named = true
			s, ok := str(v)
			cla.ClusterName = s
			return ok
		case num == 2 && typ == protowire.BytesType:
			return readAppend(&cla.Endpoints, v, readLocality)
		}
		return false
	})
	return cla, ok
}

// readLocality reads one LocalityLbEndpoints for readAssignment.
func readLocality(raw []byte, out *eds.LocalityLbEndpoints) bool {
	n, ok := count(raw, 2)
	if !ok {
		return false
	}
	if n > 0 {
		out.LbEndpoints = make([]eds.LbEndpoint, 0, n)
	}
	var seen [7]bool
	return fields(raw, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) bool {
		if num != 2 {
			if int(num) >= len(seen) || seen[num] {
				return false
			}
			seen[num] = true
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			return readLocalityName(v, &out.Locality)
		case num == 2 && typ == protowire.BytesType:
			return readAppend(&out.LbEndpoints, v, readEndpoint)
		case num == 3 && typ == protowire.BytesType:
			w, _, ok := readUInt32Value(v)
			out.LoadBalancingWeight = w
			return ok
		case num == 5 && typ == protowire.VarintType && x <= math.MaxUint32:
			out.Priority = uint32(x)
			return true
		case num == 6 && typ == protowire.BytesType: // proximity, ignored
			_, _, ok := readUInt32Value(v)
			return ok
		}
		return false
	})
}

// readAppend reads one element of a repeated field with read, and appends
// it to s.
func readAppend[T any](s *[]T, raw []byte, read func([]byte, *T) bool) bool {
	var v T
	if !read(raw, &v) {
		return false
	}
	*s = append(*s, v)
	return true
}

// readLocalityName reads a Locality.
func readLocalityName(raw []byte, out *eds.Locality) bool {
	var seen [4]bool
	return fields(raw, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
		if num < 1 || num > 3 || typ != protowire.BytesType || seen[num] {
			return false
		}
		seen[num] = true
		s, ok := str(v)
		switch num {
		case 1:
			out.Region = s
		case 2:
			out.Zone = s
		default:
			out.SubZone = s
		}
		return ok
	})
}

// readEndpoint reads one LbEndpoint with an inline endpoint.
func readEndpoint(raw []byte, out *eds.LbEndpoint) bool {
	var seen [5]bool
	ok := fields(raw, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) bool {
		if int(num) >= len(seen) || seen[num] {
			return false
		}
		seen[num] = true
		switch {
		case num == 1 && typ == protowire.BytesType:
			return readHost(v, out)
		case num == 2 && typ == protowire.VarintType && x < uint64(len(corev3.HealthStatus_name)):
			out.HealthStatus = eds.HealthStatus(x)
			return true
		case num == 4 && typ == protowire.BytesType:
			w, _, ok := readUInt32Value(v)
			out.LoadBalancingWeight = w
			return ok && w != 0 // 0, when set, is refused
		}
		return false
	})
	return ok && seen[1]
}

// readHost reads an Endpoint whose address is a socket address.
func readHost(raw []byte, out *eds.LbEndpoint) bool {
	var has, hostname bool
	ok := fields(raw, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
		if num == 3 && typ == protowire.BytesType && !hostname { // ignored
			hostname = true
			return utf8.Valid(v)
		}
		if num != 1 || typ != protowire.BytesType || has {
			return false
		}
		has = true
		var sock bool
		return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) bool {
			if num != 1 || typ != protowire.BytesType || sock {
				return false
			}
			sock = true
			return readSocketAddress(v, out)
		}) && sock
	})
	return ok && has
}

// readSocketAddress reads a TCP SocketAddress with an address and a
// port_value.
func readSocketAddress(raw []byte, out *eds.LbEndpoint) bool {
	var seen [7]bool
	ok := fields(raw, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) bool {
		if num < 1 || int(num) >= len(seen) || seen[num] {
			return false
		}
		seen[num] = true
		switch {
		case num == 1 && typ == protowire.VarintType:
			return x == 0 // TCP
		case num == 2 && typ == protowire.BytesType:
			s, ok := str(v)
			out.Address = s
			return ok && s != ""
		case num == 3 && typ == protowire.VarintType && x <= math.MaxUint32:
			out.Port = uint32(x)
			return true
		case num == 6 && typ == protowire.VarintType: // ipv4_compat, ignored
			return true
		}
		return false
	})
	return ok && seen[2] && seen[3]
}

// readUInt32Value reads a google.protobuf.UInt32Value.
func readUInt32Value(raw []byte) (w uint32, set, ok bool) {
	ok = fields(raw, func(num protowire.Number, typ protowire.Type, _ []byte, x uint64) bool {
		if num != 1 || typ != protowire.VarintType || set || x > math.MaxUint32 {
			return false
		}
		w, set = uint32(x), true
		return true
	})
	return w, set, ok
}

// fields calls fn with each field of the message encoded in raw, in
// order: its number, wire type, and its bytes (a length-delimited field)
// or value (a varint). Any other wire type, or an encoding error, ends it
// with false; so does fn returning false.
func fields(raw []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) bool) bool {
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return false
		}
		raw = raw[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(raw)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(raw)
		default:
			return false
		}
		if n < 0 || !fn(num, typ, v, x) {
			return false
		}
		raw = raw[n:]
	}
	return true
}

// count returns how many times the length-delimited field num occurs at
// the top of raw, so that a slice is made once.
func count(raw []byte, num protowire.Number) (int, bool) {
	n := 0
	ok := fields(raw, func(got protowire.Number, typ protowire.Type, _ []byte, _ uint64) bool {
		if got == num && typ == protowire.BytesType {
			n++
		}
		return true
	})
	return n, ok
}

// str returns v as a string, and false when it is not valid UTF-8 (which
// protobuf refuses in a proto3 string).
func str(v []byte) (string, bool) {
	if !utf8.Valid(v) {
		return "", false
	}
	return string(v), true
}
