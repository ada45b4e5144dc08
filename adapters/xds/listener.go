package xds

import (
	"errors"
	"fmt"
	"strconv"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/route"
)

// The type URLs of the resources a listener leads to: LDS Listeners, RDS
// RouteConfigurations, and the two messages a Listener's API listener
// holds.
const (
	ListenerType    = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteConfigType = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

	hcmType    = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	routerType = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
)

// listenerUpdate is what a valid Listener says: where its routes are.
// Exactly one of routeConfigName (follow that RDS resource) and routes (the
// route configuration inline, compiled) is set.
type listenerUpdate struct {
	routeConfigName string
	routes          *route.Table
}

// listenerResource reads LDS Listeners with [parseListener]. LDS responses
// carry the whole set of subscribed listeners (gRFC A27), as CDS ones do.
var listenerResource = &resourceType{url: ListenerType, kind: "listener", wholeSet: true, decode: decodeListener}

func decodeListener(raw []byte) (string, any, error) {
	var l listenerv3.Listener
	if err := proto.Unmarshal(raw, &l); err != nil {
		return "", nil, fmt.Errorf("not an envoy.config.listener.v3.Listener: %w", err)
	}
	if l.GetName() == "" {
		return "", nil, errors.New("name: required")
	}
	u, err := parseListener(&l)
	if err != nil {
		return l.GetName(), nil, err
	}
	return l.GetName(), u, nil
}

// parseListener reads an API listener the way gRFC A27 and A28 say a
// client does, refusing (for a NACK) what they refuse, with the proto3
// JSON path of the field at fault: a listener without an API listener, an
// API listener that is not an HttpConnectionManager, a route specifier
// other than inline route_config or rds over ADS, an rds without a route
// configuration name, an inline route configuration A28 refuses, and a
// filter chain gRFC A39 refuses (see [checkHTTPFilters]).
func parseListener(l *listenerv3.Listener) (*listenerUpdate, error) {
	a := l.GetApiListener().GetApiListener()
	if a == nil {
		return nil, lb.ConfigErrorf("apiListener.apiListener", "required: lbkit reads only API listeners")
	}
	if a.GetTypeUrl() != hcmType {
		return nil, lb.ConfigErrorf("apiListener.apiListener", "type %q: want %q", a.GetTypeUrl(), hcmType)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := proto.Unmarshal(a.GetValue(), &hcm); err != nil {
		return nil, lb.ConfigErrorf("apiListener.apiListener", "not an HttpConnectionManager: %w", err)
	}
	if err := checkHTTPFilters(hcm.GetHttpFilters()); err != nil {
		return nil, lb.PrefixConfigError("apiListener.apiListener", err)
	}
	switch s := hcm.GetRouteSpecifier().(type) {
	case *hcmv3.HttpConnectionManager_Rds:
		if s.Rds.GetConfigSource().GetAds() == nil {
			return nil, lb.ConfigErrorf("apiListener.apiListener.rds.configSource", "want ads: gRFC A27 fetches route configurations over ADS only")
		}
		if s.Rds.GetRouteConfigName() == "" {
			return nil, lb.ConfigErrorf("apiListener.apiListener.rds.routeConfigName", "required")
		}
		return &listenerUpdate{routeConfigName: s.Rds.GetRouteConfigName()}, nil
	case *hcmv3.HttpConnectionManager_RouteConfig:
		t, err := convertRouteConfiguration(s.RouteConfig)
		if err != nil {
			return nil, lb.PrefixConfigError("apiListener.apiListener.routeConfig", err)
		}
		return &listenerUpdate{routes: t}, nil
	case *hcmv3.HttpConnectionManager_ScopedRoutes:
		return nil, lb.ConfigErrorf("apiListener.apiListener.scopedRoutes", "unsupported: want routeConfig or rds")
	default:
		return nil, lb.ConfigErrorf("apiListener.apiListener", "no route specifier: want routeConfig or rds")
	}
}

// checkHTTPFilters applies gRFC A39 to an HttpConnectionManager's filter
// chain, as a client that supports only the router filter: names are
// required and unique; each filter has a typed_config (a config_discovery
// filter is unsupported); a filter of a type lbkit does not run is refused
// unless is_optional, and then skipped; the router is the last filter, and
// there is one.
func checkHTTPFilters(fs []*hcmv3.HttpFilter) error {
	names := make(map[string]bool, len(fs))
	for i, f := range fs {
		at := "httpFilters[" + strconv.Itoa(i) + "]"
		if f.GetName() == "" {
			return lb.ConfigErrorf(at+".name", "required")
		}
		if names[f.GetName()] {
			return lb.ConfigErrorf(at+".name", "%q names two filters", f.GetName())
		}
		names[f.GetName()] = true
		tc := f.GetTypedConfig()
		switch {
		case tc == nil && f.GetIsOptional():
			continue
		case tc == nil:
			return lb.ConfigErrorf(at+".typedConfig", "required: config discovery is unsupported")
		case tc.GetTypeUrl() == routerType:
			if i != len(fs)-1 {
				return lb.ConfigErrorf(at, "the router filter must be the last filter")
			}
			return nil
		case f.GetIsOptional():
			continue
		default:
			return lb.ConfigErrorf(at+".typedConfig", "unsupported filter type %q (not optional)", tc.GetTypeUrl())
		}
	}
	return lb.ConfigErrorf("httpFilters", "no router filter: the last filter must be the router")
}

// routeConfigResource reads RDS RouteConfigurations into a compiled
// [route.Table] with [convertRouteConfiguration]. RDS responses need not
// carry every subscribed resource (gRFC A27).
var routeConfigResource = &resourceType{url: RouteConfigType, kind: "routes", decode: decodeRouteConfig}

func decodeRouteConfig(raw []byte) (string, any, error) {
	var m routev3.RouteConfiguration
	if err := proto.Unmarshal(raw, &m); err != nil {
		return "", nil, fmt.Errorf("not an envoy.config.route.v3.RouteConfiguration: %w", err)
	}
	if m.GetName() == "" {
		return "", nil, errors.New("name: required")
	}
	t, err := convertRouteConfiguration(&m)
	if err != nil {
		return m.GetName(), nil, fmt.Errorf("routes: %w", err)
	}
	return m.GetName(), t, nil
}
