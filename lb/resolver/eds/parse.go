package eds

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Parse reads a ClusterLoadAssignment in Envoy's proto3 JSON form and
// checks it with [ClusterLoadAssignment.Validate]. The package
// documentation lists the accepted fields and forms. Every error wraps an
// [*Error] naming the JSON path of the offending value.
func Parse(data []byte) (*ClusterLoadAssignment, error) {
	cla, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("eds: %w", err)
	}
	return cla, nil
}

func parse(data []byte) (*ClusterLoadAssignment, error) {
	if !utf8.Valid(data) {
		return nil, &Error{Err: errors.New("invalid JSON: not valid UTF-8")}
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, &Error{Err: fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)}
		}
		return nil, &Error{Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	top, err := decodeObject("", data)
	if err != nil {
		return nil, err
	}
	cla := &ClusterLoadAssignment{}
	raw, path, ok, err := top.get("cluster_name")
	if err != nil {
		return nil, err
	}
	if ok {
		if cla.ClusterName, err = decodeString(path, raw); err != nil {
			return nil, err
		}
	}
	if err := top.reject("named_endpoints", kindList, "named endpoints (lb_endpoints[].endpoint_name) are not implemented"); err != nil {
		return nil, err
	}
	if raw, path, ok, err = top.get("policy"); err != nil {
		return nil, err
	} else if ok {
		if err := checkPolicy(path, raw); err != nil {
			return nil, err
		}
	}
	if raw, path, ok, err = top.get("endpoints"); err != nil {
		return nil, err
	} else if ok {
		elems, err := decodeArray(path, raw)
		if err != nil {
			return nil, err
		}
		cla.Endpoints = make([]LocalityLbEndpoints, len(elems))
		for i, e := range elems {
			if err := parseLocalityLbEndpoints(index(path, i), e, &cla.Endpoints[i]); err != nil {
				return nil, err
			}
		}
	}
	if err := cla.validate(); err != nil {
		return nil, err
	}
	return cla, nil
}

// checkPolicy rejects every set field of ClusterLoadAssignment.Policy: none
// is supported.
func checkPolicy(path string, raw json.RawMessage) error {
	o, err := decodeObject(path, raw)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		kind fieldKind
		why  string
	}{
		{"drop_overloads", kindList, "drop overloads are not implemented"},
		{"overprovisioning_factor", kindMessage, "gRPC's priority policy fails over on connectivity, not on overprovisioned health (gRFC A27), so the factor would have no effect"},
		{"endpoint_stale_after", kindMessage, "stale endpoints are not tracked"},
		{"weighted_priority_health", kindScalar, "health-weighted priority load is not implemented"},
	} {
		if err := o.reject(f.name, f.kind, f.why); err != nil {
			return err
		}
	}
	return nil
}

func parseLocalityLbEndpoints(path string, raw json.RawMessage, out *LocalityLbEndpoints) error {
	o, err := decodeObject(path, raw)
	if err != nil {
		return err
	}
	if err := o.reject("load_balancer_endpoints", kindMessage, "write the endpoints in lb_endpoints"); err != nil {
		return err
	}
	if err := o.reject("leds_cluster_locality_config", kindMessage, "LEDS is not implemented"); err != nil {
		return err
	}
	if raw, path, ok, err := o.get("locality"); err != nil {
		return err
	} else if ok {
		if out.Locality, err = parseLocality(path, raw); err != nil {
			return err
		}
	}
	if out.LoadBalancingWeight, err = weightField(o, "load_balancing_weight"); err != nil {
		return err
	}
	if raw, path, ok, err := o.get("priority"); err != nil {
		return err
	} else if ok {
		if out.Priority, err = decodeUint32(path, raw); err != nil {
			return err
		}
	}
	raw, path, ok, err := o.get("lb_endpoints")
	if err != nil || !ok {
		return err
	}
	elems, err := decodeArray(path, raw)
	if err != nil {
		return err
	}
	out.LbEndpoints = make([]LbEndpoint, len(elems))
	for j, e := range elems {
		if err := parseLbEndpoint(index(path, j), e, &out.LbEndpoints[j]); err != nil {
			return err
		}
	}
	return nil
}

// weightField decodes an optional google.protobuf.UInt32Value weight, which
// Envoy requires to be at least 1 when present. Absent is 0.
func weightField(o object, field string) (uint32, error) {
	raw, path, ok, err := o.get(field)
	if err != nil || !ok {
		return 0, err
	}
	w, err := decodeUint32(path, raw)
	if err != nil {
		return 0, err
	}
	if w == 0 {
		return 0, errorf(path, "0 out of range: must be at least 1 when present")
	}
	return w, nil
}

func parseLocality(path string, raw json.RawMessage) (Locality, error) {
	o, err := decodeObject(path, raw)
	if err != nil {
		return Locality{}, err
	}
	var l Locality
	for _, f := range []struct {
		name string
		dst  *string
	}{{"region", &l.Region}, {"zone", &l.Zone}, {"sub_zone", &l.SubZone}} {
		raw, path, ok, err := o.get(f.name)
		if err != nil {
			return Locality{}, err
		}
		if ok {
			if *f.dst, err = decodeString(path, raw); err != nil {
				return Locality{}, err
			}
		}
	}
	return l, nil
}

func parseLbEndpoint(path string, raw json.RawMessage, out *LbEndpoint) error {
	o, err := decodeObject(path, raw)
	if err != nil {
		return err
	}
	if err := o.reject("endpoint_name", kindMessage, "named endpoints are not implemented; give the endpoint inline"); err != nil {
		return err
	}
	if raw, path, ok, err := o.get("health_status"); err != nil {
		return err
	} else if ok {
		h, err := decodeEnum(path, raw, healthNames[:])
		if err != nil {
			return err
		}
		out.HealthStatus = HealthStatus(h)
	}
	if out.LoadBalancingWeight, err = weightField(o, "load_balancing_weight"); err != nil {
		return err
	}
	raw, path, ok, err := o.get("endpoint")
	if err != nil {
		return err
	}
	if !ok {
		return errorf(path, "required")
	}
	return parseEndpoint(path, raw, out)
}

// parseEndpoint reads Endpoint, Address and SocketAddress into out.
func parseEndpoint(path string, raw json.RawMessage, out *LbEndpoint) error {
	ep, err := decodeObject(path, raw)
	if err != nil {
		return err
	}
	if err := ep.reject("additional_addresses", kindList, "additional addresses are not implemented"); err != nil {
		return err
	}
	raw, path, ok, err := ep.get("address")
	if err != nil {
		return err
	}
	if !ok {
		return errorf(path, "required")
	}
	addr, err := decodeObject(path, raw)
	if err != nil {
		return err
	}
	if err := addr.reject("pipe", kindMessage, "only socket_address is supported"); err != nil {
		return err
	}
	if err := addr.reject("envoy_internal_address", kindMessage, "only socket_address is supported"); err != nil {
		return err
	}
	if raw, path, ok, err = addr.get("socket_address"); err != nil {
		return err
	} else if !ok {
		return errorf(path, "required")
	}
	sa, err := decodeObject(path, raw)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		kind fieldKind
		why  string
	}{
		{"named_port", kindMessage, "give the port in port_value"},
		{"resolver_name", kindScalar, "custom resolvers are not implemented"},
		{"network_namespace_filepath", kindScalar, "network namespaces are not implemented"},
	} {
		if err := sa.reject(f.name, f.kind, f.why); err != nil {
			return err
		}
	}
	if raw, path, ok, err := sa.get("protocol"); err != nil {
		return err
	} else if ok {
		p, err := decodeEnum(path, raw, []string{"TCP", "UDP"})
		if err != nil {
			return err
		}
		if p != 0 {
			return errorf(path, "not supported: only TCP")
		}
	}
	if raw, path, ok, err = sa.get("address"); err != nil {
		return err
	} else if !ok {
		return errorf(path, "required")
	}
	if out.Address, err = decodeString(path, raw); err != nil {
		return err
	}
	if raw, path, ok, err = sa.get("port_value"); err != nil {
		return err
	} else if !ok {
		return errorf(path, "required")
	}
	out.Port, err = decodeUint32(path, raw)
	return err
}
