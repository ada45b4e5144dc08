package xds

import (
	"errors"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lbkit/lbkit/lb"
)

// testRoutes is a route configuration sending everything to cluster c.
func testRoutes(name string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{
		Name: "vh", Domains: []string{"*"},
		Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"}}},
		}},
	}}}
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testListener wraps hcm in an API listener named l, marshalled.
func testListener(t *testing.T, hcm *hcmv3.HttpConnectionManager) []byte {
	t.Helper()
	raw, err := proto.Marshal(&listenerv3.Listener{Name: "l", ApiListener: &listenerv3.ApiListener{ApiListener: mustAny(t, hcm)}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func filter(t *testing.T, name string, m proto.Message, optional bool) *hcmv3.HttpFilter {
	f := &hcmv3.HttpFilter{Name: name, IsOptional: optional}
	if m != nil {
		f.ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, m)}
	}
	return f
}

func TestDecodeListener(t *testing.T) {
	ads := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	router := func() *hcmv3.HttpFilter { return filter(t, "router", &routerv3.Router{}, false) }
	rds := &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: ads, RouteConfigName: "r"}}
	inline := &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: testRoutes("r")}
	// An unsupported filter type: any message other than the router.
	other := &durationpb.Duration{}

	t.Run("rds", func(t *testing.T) {
		name, v, err := decodeListener(testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: rds, HttpFilters: []*hcmv3.HttpFilter{router()}}))
		if err != nil || name != "l" {
			t.Fatalf("decodeListener = %q, %v", name, err)
		}
		if u := v.(*listenerUpdate); u.routeConfigName != "r" || u.routes != nil {
			t.Fatalf("update = %+v, want RDS resource r", u)
		}
	})
	t.Run("inline", func(t *testing.T) {
		_, v, err := decodeListener(testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: inline,
			HttpFilters: []*hcmv3.HttpFilter{filter(t, "opt", other, true), filter(t, "unconfigured", nil, true), router()}}))
		if err != nil {
			t.Fatal(err)
		}
		if u := v.(*listenerUpdate); u.routeConfigName != "" || u.routes == nil {
			t.Fatalf("update = %+v, want inline routes", u)
		}
	})

	badInline := testRoutes("r")
	badInline.VirtualHosts[0].Routes[0].Action = nil
	for _, tc := range []struct {
		name     string
		listener []byte
		path     string // the ConfigError's path
		reason   string // in the reason
	}{
		{"no api listener", mustMarshal(t, &listenerv3.Listener{Name: "l"}), "apiListener.apiListener", "required"},
		{"not an hcm", mustMarshal(t, &listenerv3.Listener{Name: "l", ApiListener: &listenerv3.ApiListener{ApiListener: mustAny(t, other)}}), "apiListener.apiListener", "want"},
		{"no route specifier", testListener(t, &hcmv3.HttpConnectionManager{HttpFilters: []*hcmv3.HttpFilter{router()}}), "apiListener.apiListener", "no route specifier"},
		{"scoped routes", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &hcmv3.ScopedRoutes{}}, HttpFilters: []*hcmv3.HttpFilter{router()}}), "apiListener.apiListener.scopedRoutes", "unsupported"},
		{"rds not over ads", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{RouteConfigName: "r", ConfigSource: &corev3.ConfigSource{}}}, HttpFilters: []*hcmv3.HttpFilter{router()}}), "apiListener.apiListener.rds.configSource", "ads"},
		{"rds without name", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: ads}}, HttpFilters: []*hcmv3.HttpFilter{router()}}), "apiListener.apiListener.rds.routeConfigName", "required"},
		{"bad inline routes", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: badInline}, HttpFilters: []*hcmv3.HttpFilter{router()}}), "apiListener.apiListener.routeConfig.virtualHosts[0].routes[0].route", "no action"},
		{"no filters", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: rds}), "apiListener.apiListener.httpFilters", "no router"},
		{"router not last", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: rds, HttpFilters: []*hcmv3.HttpFilter{router(), filter(t, "opt", other, true)}}), "apiListener.apiListener.httpFilters[0]", "last"},
		{"unsupported filter", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: rds, HttpFilters: []*hcmv3.HttpFilter{filter(t, "x", other, false), router()}}), "apiListener.apiListener.httpFilters[0].typedConfig", "unsupported filter type"},
		{"config discovery", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: rds, HttpFilters: []*hcmv3.HttpFilter{filter(t, "x", nil, false), router()}}), "apiListener.apiListener.httpFilters[0].typedConfig", "required"},
		{"unnamed filter", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: rds, HttpFilters: []*hcmv3.HttpFilter{filter(t, "", &routerv3.Router{}, false)}}), "apiListener.apiListener.httpFilters[0].name", "required"},
		{"duplicate filter", testListener(t, &hcmv3.HttpConnectionManager{RouteSpecifier: rds, HttpFilters: []*hcmv3.HttpFilter{filter(t, "router", other, true), router()}}), "apiListener.apiListener.httpFilters[1].name", "two filters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, v, err := decodeListener(tc.listener)
			var ce *lb.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("decodeListener = %v, %v; want a *lb.ConfigError", v, err)
			}
			if name != "l" || v != nil || ce.Path != tc.path || !strings.Contains(ce.Err.Error(), tc.reason) {
				t.Fatalf("decodeListener = %q, %v, %q; want l, nil, path %q with %q", name, v, err, tc.path, tc.reason)
			}
		})
	}
	if _, _, err := decodeListener(mustMarshal(t, &listenerv3.Listener{})); err == nil {
		t.Fatal("a listener without a name was accepted")
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	raw, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestDecodeRouteConfig(t *testing.T) {
	name, v, err := decodeRouteConfig(mustMarshal(t, testRoutes("r")))
	if err != nil || name != "r" || v == nil {
		t.Fatalf("decodeRouteConfig = %q, %v, %v", name, v, err)
	}
	bad := testRoutes("r")
	bad.VirtualHosts[0].Routes[0].Action = nil
	name, v, err = decodeRouteConfig(mustMarshal(t, bad))
	var ce *lb.ConfigError
	if !errors.As(err, &ce) || name != "r" || v != nil || !strings.HasPrefix(ce.Path, "virtualHosts[0].routes[0]") {
		t.Fatalf("decodeRouteConfig of a route without action = %q, %v, %v", name, v, err)
	}
	if _, _, err := decodeRouteConfig(mustMarshal(t, &routev3.RouteConfiguration{})); err == nil {
		t.Fatal("a route configuration without a name was accepted")
	}
}

// The client reads LDS and RDS responses through the two resource types:
// a valid listener and route configuration reach their watchers; an
// invalid route configuration is NACKed naming the field, its watcher
// hears of the failure, and the cache keeps the last valid value (gRFC
// A46's per-resource NACK, which A57 builds on).
func TestClientReadsListenersAndRouteConfigs(t *testing.T) {
	c := offlineClient(t, listenerResource, routeConfigResource)
	lw, rw := recordingWatcher{make(chan string, 8)}, recordingWatcher{make(chan string, 8)}
	run(t, c, func() {
		c.watch(ListenerType, "l", lw, nil)
		c.watch(RouteConfigType, "r", rw, nil)
	})
	for _, w := range []recordingWatcher{lw, rw} {
		if got := w.next(t); got != "failed" { // the stream's error, at once
			t.Fatalf("first callback %q, want failed", got)
		}
	}
	ads := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	l := &listenerv3.Listener{Name: "l", ApiListener: &listenerv3.ApiListener{ApiListener: mustAny(t, &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: ads, RouteConfigName: "r"}},
		HttpFilters:    []*hcmv3.HttpFilter{filter(t, "router", &routerv3.Router{}, false)},
	})}}
	respond := func(typ, version string, m proto.Message) {
		resp := &discoveryv3.DiscoveryResponse{TypeUrl: typ, VersionInfo: version, Nonce: version, Resources: []*anypb.Any{mustAny(t, m)}}
		run(t, c, func() { c.handle(c.conns[0], resp) })
	}
	respond(ListenerType, "1", l)
	if got := lw.next(t); got != "update" {
		t.Fatalf("listener: %q, want update", got)
	}
	respond(RouteConfigType, "1", testRoutes("r"))
	if got := rw.next(t); got != "update" {
		t.Fatalf("routes: %q, want update", got)
	}
	var good any
	run(t, c, func() { good = c.types[RouteConfigType].resources["r"].value })
	bad := testRoutes("r")
	bad.VirtualHosts[0].Routes[0].Action = nil
	respond(RouteConfigType, "2", bad)
	if got := rw.next(t); got != "failed" {
		t.Fatalf("invalid routes: %q, want failed", got)
	}
	run(t, c, func() {
		w := c.conns[0].wire[RouteConfigType]
		if !strings.Contains(w.nack, "virtualHosts[0].routes[0].route") || w.version != "1" {
			t.Errorf("after the invalid routes: nack %q, version %q; want a NACK naming the route, version 1", w.nack, w.version)
		}
		if c.types[RouteConfigType].resources["r"].value != good {
			t.Error("the invalid routes replaced the last valid ones")
		}
	})
}
