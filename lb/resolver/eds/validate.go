package eds

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Validate checks c as Envoy and gRFC A27 do, returning an error that wraps
// an [*Error] naming the first offending field's JSON path:
//
//   - cluster_name is not empty;
//   - each priority is at most [MaxPriority], and the priorities of all
//     localities (including those left out of the tree for want of a
//     weight or of usable endpoints) form a contiguous range from 0;
//   - a locality appears at most once per priority, and its fields are
//     valid UTF-8;
//   - the locality weights of one priority, and the endpoint weights of one
//     locality (an unset weight counting 1), each sum to at most
//     4294967295;
//   - every address is an IP literal or a host name (see the package
//     documentation), every port is from 1 to 65535, every health status is
//     one of the enum's values;
//   - no address:port appears twice in the whole assignment, whatever the
//     health status (IP literals are compared in canonical form, host
//     names case-insensitively);
//   - every drop category has a name of valid UTF-8 and a denominator
//     that is one of the enum's values.
//
// [Parse] calls Validate; call it yourself only on a value built by hand.
func (c *ClusterLoadAssignment) Validate() error {
	if err := c.validate(); err != nil {
		return fmt.Errorf("eds: %w", err)
	}
	return nil
}

func (c *ClusterLoadAssignment) validate() *Error {
	if c.ClusterName == "" {
		return errorf("cluster_name", "required")
	}
	localities := make(map[uint32]map[Locality]string) // priority → locality → path
	localitySums := make(map[uint32]uint64)
	unique := endpointSet{size: c.endpointCount()}
	for i, le := range c.Endpoints {
		path := index("endpoints", i)
		if le.Priority > MaxPriority {
			return errorf(join(path, "priority"), "%d out of range 0..%d", le.Priority, MaxPriority)
		}
		for _, f := range []struct{ name, v string }{{"region", le.Locality.Region}, {"zone", le.Locality.Zone}, {"sub_zone", le.Locality.SubZone}} {
			if !utf8.ValidString(f.v) {
				return errorf(join(path, "locality."+f.name), "not valid UTF-8")
			}
		}
		seen := localities[le.Priority]
		if seen == nil {
			seen = make(map[Locality]string)
			localities[le.Priority] = seen
		}
		if first, dup := seen[le.Locality]; dup {
			return errorf(join(path, "locality"), "locality %q appears twice at priority %d (first at %s)", le.Locality.Name(), le.Priority, first)
		}
		seen[le.Locality] = path
		localitySums[le.Priority] += uint64(le.LoadBalancingWeight)
		if localitySums[le.Priority] > math.MaxUint32 {
			return errorf(join(path, "load_balancing_weight"), "the locality weights at priority %d sum to more than %d", le.Priority, uint32(math.MaxUint32))
		}
		var endpointSum uint64
		for j, ep := range le.LbEndpoints {
			endpointSum += uint64(max(ep.LoadBalancingWeight, 1))
			if endpointSum > math.MaxUint32 {
				return errorf(join(endpointPath(i, j), "load_balancing_weight"), "the endpoint weights of locality %q sum to more than %d", le.Locality.Name(), uint32(math.MaxUint32))
			}
			if !ep.HealthStatus.valid() {
				return errorf(join(endpointPath(i, j), "health_status"), "unknown value %d", int32(ep.HealthStatus))
			}
			if err := checkAddress(ep.Address); err != nil {
				return &Error{Path: join(socketAddressPath(i, j), "address"), Err: err}
			}
			if ep.Port < 1 || ep.Port > 65535 {
				return errorf(join(socketAddressPath(i, j), "port_value"), "%d out of range 1..65535", ep.Port)
			}
			if !unique.add(ep) {
				fi, fj := c.firstWith(ep)
				return errorf(socketAddressPath(i, j), "address %s appears twice (first at %s)", ep.hostPort(), socketAddressPath(fi, fj))
			}
		}
	}
	for i, d := range c.DropOverloads {
		path := index("policy.drop_overloads", i)
		switch {
		case d.Category == "":
			return errorf(join(path, "category"), "required: the drop's name")
		case !utf8.ValidString(d.Category):
			return errorf(join(path, "category"), "not valid UTF-8")
		case d.DropPercentage.Denominator < 0 || int(d.DropPercentage.Denominator) >= len(denominatorNames):
			return errorf(join(path, "drop_percentage.denominator"), "unknown value %d (want 0 to %d)", int32(d.DropPercentage.Denominator), len(denominatorNames)-1)
		}
	}
	// Contiguity: report the first locality, in document order, whose
	// priority lies above a missing one.
	for p := uint32(0); p <= MaxPriority; p++ {
		if _, ok := localities[p]; ok {
			continue
		}
		for i, le := range c.Endpoints {
			if le.Priority > p {
				return errorf(join(index("endpoints", i), "priority"), "%d leaves a gap: no locality has priority %d, and priorities must run from 0 without gaps", le.Priority, p)
			}
		}
		break
	}
	return nil
}

// endpointPath is the JSON path of endpoint j of locality i; the paths
// are built only for an error, so that a valid assignment allocates none.
func endpointPath(i, j int) string {
	return index(join(index("endpoints", i), "lb_endpoints"), j)
}

// socketAddressPath is the JSON path of the socket address of endpoint j
// of locality i.
func socketAddressPath(i, j int) string {
	return join(endpointPath(i, j), "endpoint.address.socket_address")
}

// endpointSet holds the addresses seen so far for the duplicate check,
// without building their strings: IP literals in canonical form
// (unmapped, zone kept) and host names in lower case, each with its port.
type endpointSet struct {
	size  int // the number of endpoints, to size a map once
	ips   map[netip.AddrPort]struct{}
	names map[namePort]struct{}
}

// endpointCount returns the number of endpoints of c.
func (c *ClusterLoadAssignment) endpointCount() int {
	n := 0
	for _, le := range c.Endpoints {
		n += len(le.LbEndpoints)
	}
	return n
}

// namePort is a host name in lower case and a port.
type namePort struct {
	name string
	port uint16
}

// add adds ep's address, valid and with a valid port, and reports whether
// it was new.
func (s *endpointSet) add(ep LbEndpoint) bool {
	if ip, err := netip.ParseAddr(ep.Address); err == nil {
		k := netip.AddrPortFrom(ip.Unmap(), uint16(ep.Port))
		if _, dup := s.ips[k]; dup {
			return false
		}
		if s.ips == nil {
			s.ips = make(map[netip.AddrPort]struct{}, s.size)
		}
		s.ips[k] = struct{}{}
		return true
	}
	k := namePort{strings.ToLower(ep.Address), uint16(ep.Port)}
	if _, dup := s.names[k]; dup {
		return false
	}
	if s.names == nil {
		s.names = make(map[namePort]struct{}, s.size)
	}
	s.names[k] = struct{}{}
	return true
}

// firstWith returns the indices of the first endpoint whose address is
// ep's, for the error about a duplicate.
func (c *ClusterLoadAssignment) firstWith(ep LbEndpoint) (int, int) {
	want := ep.hostPort()
	for i, le := range c.Endpoints {
		for j, e := range le.LbEndpoints {
			if e.hostPort() == want {
				return i, j
			}
		}
	}
	return 0, 0 // not reached: ep itself is in c
}

// checkAddress returns why s is neither an IP literal nor a host name.
func checkAddress(s string) error {
	_, err := canonicalHost(s)
	return err
}

// hostPort returns the address the tree publishes for ep, which Validate
// has accepted, in one allocation.
func (ep LbEndpoint) hostPort() string {
	host, _ := canonicalHost(ep.Address)
	var port [5]byte
	p := strconv.AppendUint(port[:0], uint64(ep.Port), 10)
	var b strings.Builder
	b.Grow(len(host) + 3 + len(p))
	if strings.IndexByte(host, ':') >= 0 {
		b.WriteByte('[')
		b.WriteString(host)
		b.WriteByte(']')
	} else {
		b.WriteString(host)
	}
	b.WriteByte(':')
	b.Write(p)
	return b.String()
}

// canonicalHost returns the published form of an endpoint's address: an
// IP literal in canonical form (an IPv4-mapped IPv6 address unmapped, the
// zone kept), or a host name in lower case. An address already in that
// form is returned as it is, without allocating.
func canonicalHost(s string) (string, error) {
	if s == "" {
		return "", errors.New("required")
	}
	if ip, err := netip.ParseAddr(s); err == nil {
		ip = ip.Unmap()
		var buf [64]byte
		if string(ip.AppendTo(buf[:0])) == s {
			return s, nil
		}
		return ip.String(), nil
	}
	if err := checkHostname(s); err != nil {
		return "", fmt.Errorf("%q is not an IP literal or a host name: %w", s, err)
	}
	return strings.ToLower(s), nil
}

// checkHostname accepts RFC 1123 host names, with '_' also allowed in a
// label (as in many service names) and an optional final '.': at most 253
// bytes; labels of 1 to 63 letters, digits, '-' or '_', not beginning or
// ending with '-'; the last label not all digits (so a malformed IPv4
// address is not taken for a name).
func checkHostname(s string) error {
	name := strings.TrimSuffix(s, ".")
	if name == "" {
		return errors.New("empty name")
	}
	if len(name) > 253 {
		return fmt.Errorf("longer than 253 bytes")
	}
	last := ""
	for l := range strings.SplitSeq(name, ".") {
		if l == "" {
			return errors.New("empty label")
		}
		if len(l) > 63 {
			return fmt.Errorf("label %q is longer than 63 bytes", l)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("label %q begins or ends with '-'", l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("character %q not allowed", c)
			}
		}
		last = l
	}
	if strings.Trim(last, "0123456789") == "" {
		return errors.New("the last label is all digits")
	}
	return nil
}
