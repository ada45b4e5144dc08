//lint:file-ignore SA1019 control planes still send the deprecated header matchers and total_weight, which gRFC A28 reads

package xds

import (
	"math"
	"strconv"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/route"
)

// convertRouteConfiguration converts an Envoy RouteConfiguration straight
// into lbkit's route model and compiles it with [route.Compile], which
// applies gRFC A28's rules: the same result, accepted or refused at the
// same field, as writing m as proto3 JSON and reading it with
// [route.Parse] (TestPropertyConvertRoutesAgreesWithParse). A refusal is
// an *lb.ConfigError whose path is the proto3 JSON path of the field
// ("virtualHosts[0].routes[2].route.clusterHeader"), the reason for the
// NACK. Fields A28 does not read are ignored, as route.Parse ignores them;
// a path specifier, header matcher or string matcher lbkit does not know
// (connect_matcher, path_separated_prefix, path_match_policy, a custom
// string matcher) counts as absent, so the match is refused for having
// none.
func convertRouteConfiguration(m *routev3.RouteConfiguration) (*route.Table, error) {
	if err := checkReadable(m); err != nil {
		return nil, err
	}
	cfg := &route.Config{Name: m.GetName()}
	for _, vh := range m.GetVirtualHosts() {
		v := route.VirtualHost{Name: vh.GetName(), Domains: vh.GetDomains()}
		for _, r := range vh.GetRoutes() {
			v.Routes = append(v.Routes, route.Route{Name: r.GetName(), Match: convertMatch(r.GetMatch()), Action: convertAction(r)})
		}
		cfg.VirtualHosts = append(cfg.VirtualHosts, v)
	}
	return route.Compile(cfg)
}

// checkReadable refuses, in document order, what route.Parse would refuse
// while reading the proto3 JSON of m, before route.Compile sees anything:
// a denominator proto3 JSON writes as a number (a value this build of
// Envoy's API does not name), and a duration beyond a Go time.Duration.
func checkReadable(m *routev3.RouteConfiguration) error {
	for i, vh := range m.GetVirtualHosts() {
		for j, r := range vh.GetRoutes() {
			at := "virtualHosts[" + strconv.Itoa(i) + "].routes[" + strconv.Itoa(j) + "]"
			d := r.GetMatch().GetRuntimeFraction().GetDefaultValue().GetDenominator()
			if _, named := typev3.FractionalPercent_DenominatorType_name[int32(d)]; !named {
				return lb.ConfigErrorf(at+".match.runtimeFraction.defaultValue.denominator", "want a denominator's name, got %d", d)
			}
			ra := r.GetRoute()
			if !fitsDuration(ra.GetTimeout()) {
				return lb.ConfigErrorf(at+".route.timeout", "duration %v overflows a Go time.Duration", ra.GetTimeout().AsDuration())
			}
			if msd := ra.GetMaxStreamDuration().GetMaxStreamDuration(); !fitsDuration(msd) {
				return lb.ConfigErrorf(at+".route.maxStreamDuration.maxStreamDuration", "duration overflows a Go time.Duration")
			}
		}
	}
	return nil
}

// fitsDuration reports whether d (nil: absent) fits a time.Duration.
func fitsDuration(d *durationpb.Duration) bool {
	const maxSecs = math.MaxInt64 / int64(time.Second)
	s, n := d.GetSeconds(), int64(d.GetNanos())
	switch {
	case s > maxSecs || s < -maxSecs:
		return false
	case s == maxSecs:
		return n <= math.MaxInt64%int64(time.Second)
	case s == -maxSecs:
		return n >= -(math.MaxInt64 % int64(time.Second))
	}
	return true
}

func convertMatch(rm *routev3.RouteMatch) route.Match {
	var m route.Match
	switch ps := rm.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		m.Prefix = &ps.Prefix
	case *routev3.RouteMatch_Path:
		m.Path = &ps.Path
	case *routev3.RouteMatch_SafeRegex:
		m.SafeRegex = convertRegex(ps.SafeRegex)
	}
	if cs := rm.GetCaseSensitive(); cs != nil {
		v := cs.GetValue()
		m.CaseSensitive = &v
	}
	for _, h := range rm.GetHeaders() {
		m.Headers = append(m.Headers, convertHeader(h))
	}
	if rf := rm.GetRuntimeFraction(); rf != nil {
		m.RuntimeFraction = &route.RuntimeFraction{RuntimeKey: rf.GetRuntimeKey(), DefaultValue: convertFraction(rf.GetDefaultValue())}
	}
	for _, q := range rm.GetQueryParameters() {
		m.QueryParameters = append(m.QueryParameters, route.QueryParameterMatcher{Name: q.GetName()})
	}
	return m
}

func convertRegex(re *matcherv3.RegexMatcher) *route.RegexMatcher {
	return &route.RegexMatcher{Regex: re.GetRegex()}
}

// convertFraction converts a FractionalPercent as proto3 JSON writes it:
// the default denominator, HUNDRED, is left out.
func convertFraction(f *typev3.FractionalPercent) route.Fraction {
	out := route.Fraction{Numerator: f.GetNumerator()}
	if d := f.GetDenominator(); d != typev3.FractionalPercent_HUNDRED {
		out.Denominator = d.String()
	}
	return out
}

func convertHeader(h *routev3.HeaderMatcher) route.HeaderMatcher {
	out := route.HeaderMatcher{Name: h.GetName(), InvertMatch: h.GetInvertMatch()}
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_ExactMatch:
		out.ExactMatch = &s.ExactMatch
	case *routev3.HeaderMatcher_SafeRegexMatch:
		out.SafeRegexMatch = convertRegex(s.SafeRegexMatch)
	case *routev3.HeaderMatcher_RangeMatch:
		out.RangeMatch = &route.Int64Range{Start: s.RangeMatch.GetStart(), End: s.RangeMatch.GetEnd()}
	case *routev3.HeaderMatcher_PresentMatch:
		out.PresentMatch = &s.PresentMatch
	case *routev3.HeaderMatcher_PrefixMatch:
		out.PrefixMatch = &s.PrefixMatch
	case *routev3.HeaderMatcher_SuffixMatch:
		out.SuffixMatch = &s.SuffixMatch
	case *routev3.HeaderMatcher_ContainsMatch:
		out.ContainsMatch = &s.ContainsMatch
	case *routev3.HeaderMatcher_StringMatch:
		out.StringMatch = convertStringMatcher(s.StringMatch)
	}
	return out
}

func convertStringMatcher(sm *matcherv3.StringMatcher) *route.StringMatcher {
	out := &route.StringMatcher{IgnoreCase: sm.GetIgnoreCase()}
	switch p := sm.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		out.Exact = &p.Exact
	case *matcherv3.StringMatcher_Prefix:
		out.Prefix = &p.Prefix
	case *matcherv3.StringMatcher_Suffix:
		out.Suffix = &p.Suffix
	case *matcherv3.StringMatcher_Contains:
		out.Contains = &p.Contains
	case *matcherv3.StringMatcher_SafeRegex:
		out.SafeRegex = convertRegex(p.SafeRegex)
	}
	return out
}

// convertAction converts the route's action: nil unless it is a
// RouteAction (a redirect, direct response or other action, which
// route.Compile refuses).
func convertAction(r *routev3.Route) *route.Action {
	ra, ok := r.GetAction().(*routev3.Route_Route)
	if !ok {
		return nil
	}
	a := &route.Action{}
	switch cs := ra.Route.GetClusterSpecifier().(type) {
	case *routev3.RouteAction_Cluster:
		a.Cluster = cs.Cluster
	case *routev3.RouteAction_ClusterHeader:
		a.Unsupported = "clusterHeader"
	case *routev3.RouteAction_ClusterSpecifierPlugin:
		a.Unsupported = "clusterSpecifierPlugin"
	case *routev3.RouteAction_InlineClusterSpecifierPlugin:
		a.Unsupported = "inlineClusterSpecifierPlugin"
	case *routev3.RouteAction_WeightedClusters:
		wc := &route.WeightedClusters{}
		if tw := cs.WeightedClusters.GetTotalWeight(); tw != nil {
			v := tw.GetValue()
			wc.TotalWeight = &v
		}
		for _, c := range cs.WeightedClusters.GetClusters() {
			wc.Clusters = append(wc.Clusters, route.ClusterWeight{Name: c.GetName(), Weight: c.GetWeight().GetValue()})
		}
		a.WeightedClusters = wc
	}
	if t := ra.Route.GetTimeout(); t != nil {
		a.Timeout = t.AsDuration()
	}
	if d := ra.Route.GetMaxStreamDuration().GetMaxStreamDuration(); d != nil {
		a.MaxStreamDuration = d.AsDuration()
	}
	for _, hp := range ra.Route.GetHashPolicy() {
		a.HashPolicies = append(a.HashPolicies, convertHashPolicy(hp))
	}
	return a
}

// convertHashPolicy converts one of the route's hash policies (gRFC A42).
// route.Compile refuses what A42 NACKs (a header policy without a name, a
// regex rewrite RE2 rejects) and keeps, giving no hash, the kinds A42
// ignores: cookie, connection_properties, query_parameter, and
// filter_state with a key other than io.grpc.channel_id. A policy with no
// kind this build of Envoy's API knows has none set, and is refused.
func convertHashPolicy(hp *routev3.RouteAction_HashPolicy) route.HashPolicy {
	p := route.HashPolicy{Terminal: hp.GetTerminal()}
	switch ps := hp.GetPolicySpecifier().(type) {
	case *routev3.RouteAction_HashPolicy_Header_:
		h := &route.HeaderHash{HeaderName: ps.Header.GetHeaderName()}
		if rr := ps.Header.GetRegexRewrite(); rr != nil {
			h.RegexRewrite = &route.RegexRewrite{Substitution: rr.GetSubstitution()}
			if pat := rr.GetPattern(); pat != nil {
				h.RegexRewrite.Pattern = convertRegex(pat)
			}
		}
		p.Header = h
	case *routev3.RouteAction_HashPolicy_FilterState_:
		p.FilterState = &route.FilterStateHash{Key: ps.FilterState.GetKey()}
	case *routev3.RouteAction_HashPolicy_Cookie_:
		p.Cookie = &route.IgnoredHash{}
	case *routev3.RouteAction_HashPolicy_ConnectionProperties_:
		p.ConnectionProperties = &route.IgnoredHash{}
	case *routev3.RouteAction_HashPolicy_QueryParameter_:
		p.QueryParameter = &route.IgnoredHash{}
	}
	return p
}
