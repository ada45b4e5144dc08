//lint:file-ignore SA1019 control planes still send the deprecated header matchers and total_weight, which gRFC A28 reads

package xds

import (
	"encoding/json"
	"errors"
	"math/bits"
	"net/http"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/route"
)

// routesViaJSON is the JSON detour: m as proto3 JSON, read by route.Parse.
func routesViaJSON(m *routev3.RouteConfiguration) (*route.Table, error) {
	data, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	t, _, err := route.Parse(data)
	return t, err
}

// agree fails unless the two front ends give the same result for m: both
// accept with equal models, or both refuse at the same field. It reports
// whether they accepted.
func agree(t interface{ Fatalf(string, ...any) }, m *routev3.RouteConfiguration) bool {
	direct, derr := convertRouteConfiguration(m)
	parsed, perr := routesViaJSON(m)
	if (derr == nil) != (perr == nil) {
		t.Fatalf("direct: %v\nparse: %v\nmessage: %v", derr, perr, m)
	}
	if derr != nil {
		var de, pe *lb.ConfigError
		if !errors.As(derr, &de) || !errors.As(perr, &pe) || de.Path != pe.Path {
			t.Fatalf("refused at different places:\ndirect: %v\nparse: %v\nmessage: %v", derr, perr, m)
		}
		return false
	}
	dj, _ := json.Marshal(direct.Config())
	pj, _ := json.Marshal(parsed.Config())
	if string(dj) != string(pj) {
		t.Fatalf("direct %s\nparse  %s", dj, pj)
	}
	return true
}

// TestPropertyConvertRoutesAgreesWithParse: for random RouteConfigurations,
// valid and not (every path specifier, header matcher, string matcher and
// action, bad regexes, zero and overflowing weights, unnamed enums,
// durations a Go time.Duration cannot hold), convertRouteConfiguration and
// the JSON detour agree.
func TestPropertyConvertRoutesAgreesWithParse(t *testing.T) {
	var accepted, runs int
	defer func() {
		t.Logf("accepted %d of %d", accepted, runs)
		if runs > 0 && accepted*10 < runs {
			t.Errorf("only %d of %d random route configurations were accepted", accepted, runs)
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		runs++
		if agree(t, genRouteConfiguration(t)) {
			accepted++
		}
	})
}

func genRouteConfiguration(t *rapid.T) *routev3.RouteConfiguration {
	m := &routev3.RouteConfiguration{Name: "rc"}
	for range rapid.IntRange(0, 2).Draw(t, "hosts") {
		vh := &routev3.VirtualHost{Name: "vh", Domains: rapid.SliceOfN(rapid.SampledFrom([]string{"*", "a.com", "*.a.com", "a.*", "", "a*b"}), 0, 2).Draw(t, "domains")}
		if len(vh.Domains) == 0 && !rare(t, 10, "no domains") {
			vh.Domains = []string{"*"}
		}
		for range rapid.IntRange(0, 3).Draw(t, "routes") {
			vh.Routes = append(vh.Routes, genProtoRoute(t))
		}
		m.VirtualHosts = append(m.VirtualHosts, vh)
	}
	return m
}

var genRegexText = rapid.SampledFrom([]string{"/a.*", "(a", "[0-9]+", "(?i)x", "a{2,1}", ""})

func genProtoRoute(t *rapid.T) *routev3.Route {
	rm := &routev3.RouteMatch{}
	switch rapid.IntRange(0, 5).Draw(t, "path kind") {
	case 0, 1:
		rm.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: rapid.SampledFrom([]string{"", "/", "/a"}).Draw(t, "prefix")}
	case 2:
		rm.PathSpecifier = &routev3.RouteMatch_Path{Path: "/a"}
	case 3:
		rm.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: genRegexText.Draw(t, "regex")}}
	case 4:
		rm.PathSpecifier = &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/a"}
	}
	if rare(t, 3, "case") {
		rm.CaseSensitive = wrapperspb.Bool(rapid.Bool().Draw(t, "case sensitive"))
	}
	for range rapid.IntRange(0, 2).Draw(t, "headers") {
		rm.Headers = append(rm.Headers, genProtoHeader(t))
	}
	if rare(t, 3, "fraction") {
		rm.RuntimeFraction = &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{
			Numerator:   rapid.Uint32Range(0, 2_000_000).Draw(t, "numerator"),
			Denominator: typev3.FractionalPercent_DenominatorType(rapid.Int32Range(0, 3).Draw(t, "denominator")),
		}, RuntimeKey: "k"}
	}
	if rare(t, 8, "query") {
		rm.QueryParameters = []*routev3.QueryParameterMatcher{{Name: "q"}}
	}
	r := &routev3.Route{Name: "r", Match: rm}
	if rare(t, 10, "redirect") {
		r.Action = &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{}}
		return r
	}
	ra := &routev3.RouteAction{}
	switch rapid.IntRange(0, 4).Draw(t, "cluster kind") {
	case 0, 1:
		ra.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: rapid.SampledFrom([]string{"a", "b", ""}).Draw(t, "cluster")}
	case 2, 3:
		wc := &routev3.WeightedCluster{}
		for i := range rapid.IntRange(0, 3).Draw(t, "weighted") {
			cw := &routev3.WeightedCluster_ClusterWeight{Name: []string{"a", "b", "c"}[i]}
			if !rare(t, 6, "no weight") {
				cw.Weight = wrapperspb.UInt32(rapid.SampledFrom([]uint32{0, 1, 9, 90, 1 << 31}).Draw(t, "weight"))
			}
			wc.Clusters = append(wc.Clusters, cw)
		}
		if rare(t, 5, "total") {
			wc.TotalWeight = wrapperspb.UInt32(100)
		}
		ra.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}
	case 4:
		ra.ClusterSpecifier = &routev3.RouteAction_ClusterHeader{ClusterHeader: "x-cluster"}
	}
	if rare(t, 3, "timeout") {
		ra.Timeout = genDuration(t, "timeout")
	}
	if rare(t, 3, "max stream duration") {
		ra.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: genDuration(t, "msd")}
	}
	if rare(t, 3, "hash policies") {
		for range rapid.IntRange(1, 3).Draw(t, "hash policy count") {
			ra.HashPolicy = append(ra.HashPolicy, genProtoHashPolicy(t))
		}
	}
	r.Action = &routev3.Route_Route{Route: ra}
	return r
}

// genProtoHashPolicy draws a hash policy of every kind gRFC A42 names,
// valid and not (no name, no kind, a bad regex or substitution).
func genProtoHashPolicy(t *rapid.T) *routev3.RouteAction_HashPolicy {
	hp := &routev3.RouteAction_HashPolicy{Terminal: rapid.Bool().Draw(t, "terminal")}
	switch rapid.IntRange(0, 6).Draw(t, "hash kind") {
	case 0, 1:
		h := &routev3.RouteAction_HashPolicy_Header{HeaderName: rapid.SampledFrom([]string{"x-user", "x-a-bin", ":path", ""}).Draw(t, "hash header")}
		if rare(t, 2, "rewrite") {
			h.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{Substitution: rapid.SampledFrom([]string{"", `\1`, `\x`, "$1"}).Draw(t, "substitution")}
			if !rare(t, 6, "no pattern") {
				h.RegexRewrite.Pattern = &matcherv3.RegexMatcher{Regex: genRegexText.Draw(t, "rewrite regex")}
			}
		}
		hp.PolicySpecifier = &routev3.RouteAction_HashPolicy_Header_{Header: h}
	case 2:
		hp.PolicySpecifier = &routev3.RouteAction_HashPolicy_FilterState_{FilterState: &routev3.RouteAction_HashPolicy_FilterState{
			Key: rapid.SampledFrom([]string{"io.grpc.channel_id", "other", ""}).Draw(t, "key")}}
	case 3:
		hp.PolicySpecifier = &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{Name: "session", Ttl: durationpb.New(time.Second)}}
	case 4:
		hp.PolicySpecifier = &routev3.RouteAction_HashPolicy_ConnectionProperties_{ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true}}
	case 5:
		hp.PolicySpecifier = &routev3.RouteAction_HashPolicy_QueryParameter_{QueryParameter: &routev3.RouteAction_HashPolicy_QueryParameter{Name: "q"}}
	}
	return hp
}

func genDuration(t *rapid.T, label string) *durationpb.Duration {
	switch rapid.IntRange(0, 3).Draw(t, label) {
	case 0:
		return durationpb.New(-time.Second)
	case 1:
		return &durationpb.Duration{Seconds: 300 * 365 * 24 * 3600} // beyond a time.Duration
	}
	return durationpb.New(time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, label+" ns")))
}

func genProtoHeader(t *rapid.T) *routev3.HeaderMatcher {
	h := &routev3.HeaderMatcher{Name: rapid.SampledFrom([]string{"x-a", ":method", "x-b-bin", ""}).Draw(t, "header name"), InvertMatch: rare(t, 3, "invert")}
	value := rapid.SampledFrom([]string{"", "a", "GET"}).Draw(t, "value")
	switch rapid.IntRange(0, 8).Draw(t, "header kind") {
	case 0:
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_ExactMatch{ExactMatch: value}
	case 1:
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &matcherv3.RegexMatcher{Regex: genRegexText.Draw(t, "header regex")}}
	case 2:
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: -3, End: rapid.Int64Range(-5, 1<<40).Draw(t, "end")}}
	case 3:
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_PresentMatch{PresentMatch: rapid.Bool().Draw(t, "present")}
	case 4:
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_PrefixMatch{PrefixMatch: value}
	case 5:
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_SuffixMatch{SuffixMatch: value}
	case 6:
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_ContainsMatch{ContainsMatch: value}
	case 7:
		sm := &matcherv3.StringMatcher{IgnoreCase: rapid.Bool().Draw(t, "ignore case")}
		switch rapid.IntRange(0, 5).Draw(t, "string kind") {
		case 0:
			sm.MatchPattern = &matcherv3.StringMatcher_Exact{Exact: value}
		case 1:
			sm.MatchPattern = &matcherv3.StringMatcher_Prefix{Prefix: value}
		case 2:
			sm.MatchPattern = &matcherv3.StringMatcher_Suffix{Suffix: value}
		case 3:
			sm.MatchPattern = &matcherv3.StringMatcher_Contains{Contains: value}
		case 4:
			sm.MatchPattern = &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: genRegexText.Draw(t, "string regex")}}
		}
		h.HeaderMatchSpecifier = &routev3.HeaderMatcher_StringMatch{StringMatch: sm}
	}
	return h
}

// A route configuration shaped like Istio's canary, accepted by both front
// ends alike, and bad ones refused with the field.
func TestConvertRouteConfiguration(t *testing.T) {
	canary := &routev3.RouteConfiguration{Name: "8080", VirtualHosts: []*routev3.VirtualHost{{
		Name: "reviews.default.svc.cluster.local:8080", Domains: []string{"reviews.default.svc.cluster.local", "reviews", "reviews:8080"},
		Routes: []*routev3.Route{
			{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}, Headers: []*routev3.HeaderMatcher{{
				Name: "end-user", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "jason"}}}}}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "outbound|8080|v2|reviews"}, Timeout: durationpb.New(0)}}},
			{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{
					Clusters: []*routev3.WeightedCluster_ClusterWeight{{Name: "outbound|8080|v1|reviews", Weight: wrapperspb.UInt32(90)}, {Name: "outbound|8080|v3|reviews", Weight: wrapperspb.UInt32(10)}}}},
					MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(3 * time.Second)}}}},
		}}}}
	if !agree(t, canary) {
		t.Fatal("the canary configuration was refused")
	}
	tab, _ := convertRouteConfiguration(canary)
	if a := tab.Route(1).Action; a.Bound() != 3*time.Second || len(a.WeightedClusters.Clusters) != 2 {
		t.Fatalf("route 1: %+v", a)
	}
	bad := proto.Clone(canary).(*routev3.RouteConfiguration)
	bad.VirtualHosts[0].Routes[1].GetRoute().ClusterSpecifier = &routev3.RouteAction_ClusterHeader{ClusterHeader: "x-cluster"}
	_, err := convertRouteConfiguration(bad)
	var ce *lb.ConfigError
	if !errors.As(err, &ce) || ce.Path != "virtualHosts[0].routes[1].route.clusterHeader" {
		t.Fatalf("cluster_header: %v, want a NACK at virtualHosts[0].routes[1].route.clusterHeader", err)
	}
	agree(t, bad)
}

// Istio's consistentHash on a header becomes a header hash policy; gRFC
// A42's bad hash policies are NACKed at the field, its unsupported kinds
// are kept and give no hash.
func TestConvertRouteHashPolicies(t *testing.T) {
	rc := func(hps ...*routev3.RouteAction_HashPolicy) *routev3.RouteConfiguration {
		return &routev3.RouteConfiguration{VirtualHosts: []*routev3.VirtualHost{{Domains: []string{"*"}, Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "a"}, HashPolicy: hps}}}}}}}
	}
	header := func(name, pattern, sub string) *routev3.RouteAction_HashPolicy {
		h := &routev3.RouteAction_HashPolicy_Header{HeaderName: name}
		if pattern != "" {
			h.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: pattern}, Substitution: sub}
		}
		return &routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: h}}
	}
	good := rc(header("x-user", `^(\w+)@.*$`, `\1`),
		&routev3.RouteAction_HashPolicy{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{Name: "s"}}},
		&routev3.RouteAction_HashPolicy{Terminal: true, PolicySpecifier: &routev3.RouteAction_HashPolicy_FilterState_{FilterState: &routev3.RouteAction_HashPolicy_FilterState{Key: route.ChannelIDKey}}})
	if !agree(t, good) {
		t.Fatal("the hash policies were refused")
	}
	tab, _ := convertRouteConfiguration(good)
	got, ok := tab.Hasher(0).Hash(&route.Request{Headers: http.Header{"X-User": {"ann@example.com"}}}, 3)
	if want := bits.RotateLeft64(xxhash.Sum64String("ann"), 1) ^ 3; !ok || got != want {
		t.Fatalf("hash %#x, %v; want %#x", got, ok, want)
	}
	const at = "virtualHosts[0].routes[0].route.hashPolicy[1]"
	for _, tc := range []struct {
		hp   *routev3.RouteAction_HashPolicy
		path string
	}{
		{header("", "", ""), at + ".header.headerName"},
		{header("x", "(a", ""), at + ".header.regexRewrite.pattern.regex"},
		{header("x", "a", `\1`), at + ".header.regexRewrite.substitution"},
		{&routev3.RouteAction_HashPolicy{Terminal: true}, at},
	} {
		_, err := convertRouteConfiguration(rc(header("x-ok", "", ""), tc.hp))
		var ce *lb.ConfigError
		if !errors.As(err, &ce) || ce.Path != tc.path {
			t.Errorf("%v: %v, want a NACK at %s", tc.hp, err, tc.path)
		}
	}
}

// FuzzConvertRouteConfiguration: any bytes that decode as a
// RouteConfiguration convert without a panic, and both front ends agree.
func FuzzConvertRouteConfiguration(f *testing.F) {
	for _, m := range []*routev3.RouteConfiguration{
		{VirtualHosts: []*routev3.VirtualHost{{Domains: []string{"*"}, Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "a"}}}}}}}},
		{VirtualHosts: []*routev3.VirtualHost{{Domains: []string{"a.*"}, Routes: []*routev3.Route{{
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/a(b|c)"}},
				Headers: []*routev3.HeaderMatcher{{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 1, End: 5}}}}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{
				Clusters: []*routev3.WeightedCluster_ClusterWeight{{Name: "a", Weight: wrapperspb.UInt32(3)}}}}}}}}}}},
	} {
		data, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m routev3.RouteConfiguration
		if proto.Unmarshal(data, &m) != nil {
			return
		}
		if _, err := protojson.Marshal(&m); err != nil {
			_, _ = convertRouteConfiguration(&m) // no JSON to compare with (an invalid duration, bad UTF-8): no panic
			return
		}
		agree(t, &m)
	})
}
