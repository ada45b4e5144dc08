package xds

import (
	"fmt"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// convertAssignment converts a ClusterLoadAssignment message straight into
// the eds package's model, and checks it with [eds.Check] (Validate),
// so that the resolver converts it without a second check: the same result, accepted or
// refused, as writing m as proto3 JSON and reading it with [eds.Parse]
// (TestPropertyConvertAgreesWithParse), without the detour. Every field
// eds.Parse refuses when set is refused here when set, with the same
// reason, and a field proto3 JSON would omit (a default scalar, an unset
// message) counts as absent, as in eds.Parse. The fields are checked in
// the order protojson writes them (the order of declaration in the .proto
// files), so the first refusal is the one eds.Parse would meet first.
// Errors wrap an [*eds.Error] naming the proto field path, and begin
// "eds: " as eds.Parse's do.
func convertAssignment(m *endpointv3.ClusterLoadAssignment) (eds.Valid, error) {
	cla := &eds.ClusterLoadAssignment{ClusterName: m.GetClusterName()}
	if n := len(m.GetEndpoints()); n > 0 {
		cla.Endpoints = make([]eds.LocalityLbEndpoints, n)
	}
	for i, le := range m.GetEndpoints() {
		if err := convertLocality(le, &cla.Endpoints[i]); err != nil {
			return eds.Valid{}, fmt.Errorf("eds: %w", under("endpoints["+strconv.Itoa(i)+"]", err))
		}
	}
	if len(m.GetNamedEndpoints()) > 0 {
		return eds.Valid{}, fmt.Errorf("eds: %w", notSupported("named_endpoints", "named endpoints (lb_endpoints[].endpoint_name) are not implemented"))
	}
	if err := convertAssignmentPolicy(m.GetPolicy(), cla); err != nil {
		return eds.Valid{}, fmt.Errorf("eds: %w", err)
	}
	return eds.Check(cla)
}

// under puts err, found inside the field at prefix, at its full path. The
// converters below give paths from the message they convert, so that a
// path is built only for an error, not for every endpoint.
func under(prefix string, err *eds.Error) *eds.Error {
	err.Path = prefix + "." + err.Path
	return err
}

// notSupported is eds.Parse's refusal of a field that is set.
func notSupported(path, why string) *eds.Error {
	return &eds.Error{Path: path, Err: fmt.Errorf("not supported: %s", why)}
}

// convertAssignmentPolicy converts ClusterLoadAssignment.Policy: drop_overloads
// into cla, overprovisioning_factor ignored (gRFC A27), the fields
// eds.Parse refuses refused.
func convertAssignmentPolicy(p *endpointv3.ClusterLoadAssignment_Policy, cla *eds.ClusterLoadAssignment) *eds.Error {
	if n := len(p.GetDropOverloads()); n > 0 {
		cla.DropOverloads = make([]eds.DropOverload, n)
	}
	for i, d := range p.GetDropOverloads() {
		pct := d.GetDropPercentage()
		if den := pct.GetDenominator(); den < 0 || int(den) >= len(typev3.FractionalPercent_DenominatorType_name) {
			path := "policy.drop_overloads[" + strconv.Itoa(i) + "].drop_percentage.denominator"
			return &eds.Error{Path: path, Err: fmt.Errorf("unknown value %d (want 0 to %d)", den, len(typev3.FractionalPercent_DenominatorType_name)-1)}
		}
		cla.DropOverloads[i] = eds.DropOverload{
			Category:       d.GetCategory(),
			DropPercentage: eds.FractionalPercent{Numerator: pct.GetNumerator(), Denominator: eds.Denominator(pct.GetDenominator())},
		}
	}
	switch {
	case p.GetEndpointStaleAfter() != nil:
		return notSupported("policy.endpoint_stale_after", "stale endpoints are not tracked")
	case p.GetWeightedPriorityHealth():
		return notSupported("policy.weighted_priority_health", "health-weighted priority load is not implemented")
	}
	return nil
}

// convertLocality converts one LocalityLbEndpoints; an error's path
// starts inside it.
func convertLocality(le *endpointv3.LocalityLbEndpoints, out *eds.LocalityLbEndpoints) *eds.Error {
	l := le.GetLocality()
	out.Locality = eds.Locality{Region: l.GetRegion(), Zone: l.GetZone(), SubZone: l.GetSubZone()}
	out.Priority = le.GetPriority()
	if n := len(le.GetLbEndpoints()); n > 0 {
		out.LbEndpoints = make([]eds.LbEndpoint, n)
	}
	for j, ep := range le.GetLbEndpoints() {
		if err := convertEndpoint(ep, &out.LbEndpoints[j]); err != nil {
			return under("lb_endpoints["+strconv.Itoa(j)+"]", err)
		}
	}
	//lint:ignore SA1019 a control plane may still send the deprecated field, which eds.Parse refuses
	lbe := le.GetLoadBalancerEndpoints()
	switch {
	case lbe != nil:
		return notSupported("load_balancer_endpoints", "write the endpoints in lb_endpoints")
	case le.GetLedsClusterLocalityConfig() != nil:
		return notSupported("leds_cluster_locality_config", "LEDS is not implemented")
	}
	// A locality weight of 0, set or not, leaves the locality out (gRFC
	// A27, as grpc-go).
	out.LoadBalancingWeight = le.GetLoadBalancingWeight().GetValue()
	return nil
}

// weightOf is eds.Parse's reading of an optional UInt32Value weight: 0
// when unset, refused when set to 0.
func weightOf(w uint32, set bool, path string) (uint32, *eds.Error) {
	if set && w == 0 {
		return 0, &eds.Error{Path: path, Err: fmt.Errorf("0 out of range: must be at least 1 when present")}
	}
	return w, nil
}

// convertEndpoint converts one LbEndpoint; an error's path starts inside
// it.
func convertEndpoint(ep *endpointv3.LbEndpoint, out *eds.LbEndpoint) *eds.Error {
	e := ep.GetEndpoint()
	if e != nil {
		if err := convertHost(e, out); err != nil {
			return under("endpoint", err)
		}
	}
	if _, named := ep.GetHostIdentifier().(*endpointv3.LbEndpoint_EndpointName); named {
		return notSupported("endpoint_name", "named endpoints are not implemented; give the endpoint inline")
	}
	h := ep.GetHealthStatus()
	if h < 0 || int(h) >= len(corev3.HealthStatus_name) {
		return &eds.Error{Path: "health_status", Err: fmt.Errorf("unknown value %d (want 0 to %d)", h, len(corev3.HealthStatus_name)-1)}
	}
	out.HealthStatus = eds.HealthStatus(h)
	if k, ok := ep.GetMetadata().GetFilterMetadata()["envoy.lb"].GetFields()["hash_key"].GetKind().(*structpb.Value_StringValue); ok {
		out.HashKey = k.StringValue
	}
	var err *eds.Error
	if out.LoadBalancingWeight, err = weightOf(ep.GetLoadBalancingWeight().GetValue(), ep.GetLoadBalancingWeight() != nil, "load_balancing_weight"); err != nil {
		return err
	}
	if e == nil {
		return &eds.Error{Path: "endpoint", Err: fmt.Errorf("required")}
	}
	return nil
}

// convertHost converts an Endpoint into out's address; an error's path
// starts inside it.
func convertHost(e *endpointv3.Endpoint, out *eds.LbEndpoint) *eds.Error {
	a := e.GetAddress()
	if a != nil {
		switch {
		case a.GetPipe() != nil:
			return notSupported("address.pipe", "only socket_address is supported")
		case a.GetEnvoyInternalAddress() != nil:
			return notSupported("address.envoy_internal_address", "only socket_address is supported")
		case a.GetSocketAddress() == nil:
			return &eds.Error{Path: "address.socket_address", Err: fmt.Errorf("required")}
		}
		if err := convertSocketAddress(a.GetSocketAddress(), out); err != nil {
			return under("address.socket_address", err)
		}
	}
	if len(e.GetAdditionalAddresses()) > 0 {
		return notSupported("additional_addresses", "additional addresses are not implemented")
	}
	if a == nil {
		return &eds.Error{Path: "address", Err: fmt.Errorf("required")}
	}
	return nil
}

// convertSocketAddress converts a SocketAddress; an error's path starts
// inside it. A port
// given in the oneof counts as given, even as 0 (proto3 JSON writes it),
// and Validate then refuses 0.
func convertSocketAddress(s *corev3.SocketAddress, out *eds.LbEndpoint) *eds.Error {
	_, named := s.GetPortSpecifier().(*corev3.SocketAddress_NamedPort)
	_, havePort := s.GetPortSpecifier().(*corev3.SocketAddress_PortValue)
	switch {
	case s.GetProtocol() != corev3.SocketAddress_TCP:
		if int(s.GetProtocol()) >= len(corev3.SocketAddress_Protocol_name) || s.GetProtocol() < 0 {
			return &eds.Error{Path: "protocol", Err: fmt.Errorf("unknown value %d (want 0 to %d)", s.GetProtocol(), len(corev3.SocketAddress_Protocol_name)-1)}
		}
		return &eds.Error{Path: "protocol", Err: fmt.Errorf("not supported: only TCP")}
	case named:
		return notSupported("named_port", "give the port in port_value")
	case s.GetResolverName() != "":
		return notSupported("resolver_name", "custom resolvers are not implemented")
	case s.GetNetworkNamespaceFilepath() != "":
		return notSupported("network_namespace_filepath", "network namespaces are not implemented")
	case s.GetAddress() == "":
		return &eds.Error{Path: "address", Err: fmt.Errorf("required")}
	case !havePort:
		return &eds.Error{Path: "port_value", Err: fmt.Errorf("required")}
	}
	out.Address, out.Port = s.GetAddress(), s.GetPortValue()
	return nil
}
