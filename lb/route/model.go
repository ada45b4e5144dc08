package route

import (
	"encoding/json"
	"time"

	"github.com/lbkit/lbkit/lb"
)

// Config is a route configuration: Envoy's RouteConfiguration reduced to
// what gRFC A28 reads. It is the neutral model both front ends produce:
// [Parse] from JSON, and the xDS adapter from protobuf; [Compile] validates
// it and builds the [Table] that matches requests.
//
// Its JSON form, which [Parse] reads and json.Marshal writes, is Envoy's
// RouteConfiguration in proto3 JSON (the fields below; others are
// ignored and listed), so a route configuration a control plane serves,
// written out with protojson, is one lbkit reads:
//
//	{"virtualHosts": [{
//	  "name": "svc", "domains": ["svc.example.com", "*"],
//	  "routes": [
//	    {"match": {"prefix": "/api/", "headers": [{"name": "x-canary", "exactMatch": "1"}]},
//	     "route": {"cluster": "canary", "timeout": "2s"}},
//	    {"match": {"prefix": "/"},
//	     "route": {"weightedClusters": {"clusters": [
//	       {"name": "stable", "weight": 90}, {"name": "canary", "weight": 10}]}}}]}]}
//
// A Config is a value: [Compile] copies what it keeps.
type Config struct {
	// Name is the configuration's name (the RDS resource name); only
	// reported.
	Name string `json:"name,omitempty"`
	// VirtualHosts are matched against a request's authority by their
	// domains (see [Table.Find]).
	VirtualHosts []VirtualHost `json:"virtualHosts,omitempty"`
}

// VirtualHost is a group of routes served under some domains.
type VirtualHost struct {
	// Name names the virtual host; only reported.
	Name string `json:"name,omitempty"`
	// Domains are the authorities the virtual host serves: an exact name
	// ("svc.example.com"), a suffix wildcard ("*.example.com"), a prefix
	// wildcard ("svc.*") or "*" for every authority. At least one.
	// Compared case-insensitively.
	Domains []string `json:"domains,omitempty"`
	// Routes are tried in order; the first that matches wins.
	Routes []Route `json:"routes,omitempty"`
}

// Route is a match and what to do with the requests it matches.
type Route struct {
	// Name names the route; only reported.
	Name string `json:"name,omitempty"`
	// Match says which requests the route takes.
	Match Match `json:"match"`
	// Action is where they go ("route" in JSON, Envoy's RouteAction).
	// Nil is a route with an action lbkit does not support, which
	// [Compile] rejects (Envoy's redirect and direct_response have no
	// meaning in a client).
	Action *Action `json:"route,omitempty"`
}

// Match is a route's matching criteria: a path specifier (exactly one of
// Prefix, Path and SafeRegex), header matchers and a runtime fraction. A
// request matches when every criterion does.
type Match struct {
	// Prefix matches paths that begin with it ("" matches every path).
	Prefix *string `json:"prefix,omitempty"`
	// Path matches one path exactly.
	Path *string `json:"path,omitempty"`
	// SafeRegex matches paths its RE2 regular expression matches in full.
	SafeRegex *RegexMatcher `json:"safeRegex,omitempty"`
	// CaseSensitive, when false, compares Prefix and Path without case
	// (Unicode simple folding); nil is true. A regex is always case
	// sensitive (write (?i) in it), as in Envoy.
	CaseSensitive *bool `json:"caseSensitive,omitempty"`
	// Headers must all match.
	Headers []HeaderMatcher `json:"headers,omitempty"`
	// RuntimeFraction, when set, is the share of matching requests the
	// route takes; the others go on to the next route.
	RuntimeFraction *RuntimeFraction `json:"runtimeFraction,omitempty"`
	// QueryParameters are Envoy's query parameter matchers, by name only:
	// a route that has any never matches (gRFC A28: gRPC does not match
	// query parameters, and neither does lbkit).
	QueryParameters []QueryParameterMatcher `json:"queryParameters,omitempty"`
}

// QueryParameterMatcher is an Envoy query parameter matcher, of which
// lbkit keeps the name: its presence is what counts.
type QueryParameterMatcher struct {
	// Name is the parameter's name.
	Name string `json:"name"`
}

// RegexMatcher is Envoy's RegexMatcher: an RE2 regular expression (Go's
// regexp syntax), which must match a whole value.
type RegexMatcher struct {
	// Regex is the expression.
	Regex string `json:"regex"`
}

// HeaderMatcher matches one request header: exactly one of ExactMatch,
// SafeRegexMatch, RangeMatch, PresentMatch, PrefixMatch, SuffixMatch,
// ContainsMatch and StringMatch is set.
//
// A header given several times is matched as its values joined with ","
// (as gRPC does). A header that is absent matches only PresentMatch
// (false), or PresentMatch (true) inverted. Names ending in "-bin" are
// treated as absent (gRFC A28). The pseudo-headers ":method",
// ":authority" and ":path", and "host", read the request's method,
// authority and path.
type HeaderMatcher struct {
	// Name is the header's name, compared case-insensitively.
	Name string `json:"name"`
	// ExactMatch matches a value equal to it.
	ExactMatch *string `json:"exactMatch,omitempty"`
	// SafeRegexMatch matches a value its expression matches in full.
	SafeRegexMatch *RegexMatcher `json:"safeRegexMatch,omitempty"`
	// RangeMatch matches a base-10 integer value in [Start, End).
	RangeMatch *Int64Range `json:"rangeMatch,omitempty"`
	// PresentMatch true matches a header that is present, false one that
	// is absent.
	PresentMatch *bool `json:"presentMatch,omitempty"`
	// PrefixMatch matches a value beginning with it (not empty).
	PrefixMatch *string `json:"prefixMatch,omitempty"`
	// SuffixMatch matches a value ending with it (not empty).
	SuffixMatch *string `json:"suffixMatch,omitempty"`
	// ContainsMatch matches a value containing it (not empty).
	ContainsMatch *string `json:"containsMatch,omitempty"`
	// StringMatch is Envoy's newer form of the string matchers, which can
	// ignore case.
	StringMatch *StringMatcher `json:"stringMatch,omitempty"`
	// InvertMatch inverts the result for a present header.
	InvertMatch bool `json:"invertMatch,omitempty"`
}

// StringMatcher is Envoy's StringMatcher: exactly one of Exact, Prefix,
// Suffix, Contains and SafeRegex.
type StringMatcher struct {
	// Exact matches a value equal to it.
	Exact *string `json:"exact,omitempty"`
	// Prefix matches a value beginning with it (not empty).
	Prefix *string `json:"prefix,omitempty"`
	// Suffix matches a value ending with it (not empty).
	Suffix *string `json:"suffix,omitempty"`
	// Contains matches a value containing it (not empty).
	Contains *string `json:"contains,omitempty"`
	// SafeRegex matches a value its expression matches in full.
	SafeRegex *RegexMatcher `json:"safeRegex,omitempty"`
	// IgnoreCase compares Exact, Prefix, Suffix and Contains without case
	// (not SafeRegex).
	IgnoreCase bool `json:"ignoreCase,omitempty"`
}

// Int64Range is the range [Start, End).
type Int64Range struct {
	// Start is the first value in the range.
	Start int64 `json:"start"`
	// End is the first value after the range.
	End int64 `json:"end"`
}

// The denominators of a [Fraction], Envoy's FractionalPercent.
const (
	Hundred     = "HUNDRED"
	TenThousand = "TEN_THOUSAND"
	Million     = "MILLION"
)

// RuntimeFraction is Envoy's RuntimeFractionalPercent: only DefaultValue
// counts (gRFC A28: there is no runtime); RuntimeKey is kept, unused.
type RuntimeFraction struct {
	// DefaultValue is the share.
	DefaultValue Fraction `json:"defaultValue"`
	// RuntimeKey is ignored.
	RuntimeKey string `json:"runtimeKey,omitempty"`
}

// Fraction is Envoy's FractionalPercent: Numerator out of Denominator
// ([Hundred], [TenThousand] or [Million]; "" is Hundred). A numerator above
// the denominator is 100%.
type Fraction struct {
	// Numerator is the share, out of Denominator.
	Numerator uint32 `json:"numerator"`
	// Denominator is Hundred, TenThousand or Million.
	Denominator string `json:"denominator,omitempty"`
}

// perMillion returns f as a share of 1,000,000, at most 1,000,000.
func (f Fraction) perMillion() uint32 {
	n := uint64(f.Numerator)
	switch f.Denominator {
	case "", Hundred:
		n *= 10_000
	case TenThousand:
		n *= 100
	}
	return uint32(min(n, 1_000_000))
}

// Action is a route's action: one cluster, or clusters with weights, an
// optional timeout, and the hash policies that give a request's hash to
// a hash-based policy (ring_hash) of its cluster. Exactly one of Cluster
// and WeightedClusters is set.
type Action struct {
	// Cluster is the one cluster the requests go to.
	Cluster string `json:"cluster,omitempty"`
	// WeightedClusters splits the requests over clusters by weight.
	WeightedClusters *WeightedClusters `json:"weightedClusters,omitempty"`
	// Timeout is Envoy's route timeout ("timeout", a proto3 duration
	// such as "2.5s"); 0 is none.
	Timeout time.Duration `json:"-"`
	// MaxStreamDuration is max_stream_duration.max_stream_duration
	// ("maxStreamDuration": {"maxStreamDuration": "2.5s"}), the bound gRPC
	// applies (gRFC A31); 0 is none. See [Action.Bound].
	MaxStreamDuration time.Duration `json:"-"`
	// HashPolicies ("hashPolicy") compute the hash of the requests the
	// route takes, in order (gRFC A42; see [HashPolicy] and [Hasher]).
	HashPolicies []HashPolicy `json:"hashPolicy,omitempty"`
	// Unsupported names an action lbkit does not support that a front end
	// found (for example "cluster_header"): [Compile] rejects the route,
	// naming it.
	Unsupported string `json:"-"`
}

// WeightedClusters is a split of requests over clusters.
type WeightedClusters struct {
	// Clusters are the clusters and their weights; their total must be
	// between 1 and 2^32-1.
	Clusters []ClusterWeight `json:"clusters"`
	// TotalWeight, when set, must be the weights' total (gRFC A28).
	TotalWeight *uint32 `json:"totalWeight,omitempty"`
}

// ClusterWeight is one cluster of a split and its weight.
type ClusterWeight struct {
	// Name is the cluster's name.
	Name string `json:"name"`
	// Weight is its share (0 takes no request).
	Weight uint32 `json:"weight"`
}

// Bound returns how long a request routed here may last, from its pick to
// the end of its response: MaxStreamDuration if set, else Timeout; 0 is
// no bound.
func (a *Action) Bound() time.Duration {
	if a.MaxStreamDuration > 0 {
		return a.MaxStreamDuration
	}
	return a.Timeout
}

// MarshalJSON writes a in the form [Parse] reads, the durations as proto3
// durations.
func (a Action) MarshalJSON() ([]byte, error) {
	type plain Action
	type msd struct {
		MaxStreamDuration string `json:"maxStreamDuration"`
	}
	out := struct {
		plain
		Timeout           string `json:"timeout,omitempty"`
		MaxStreamDuration *msd   `json:"maxStreamDuration,omitempty"`
	}{plain: plain(a)}
	if a.Timeout != 0 {
		out.Timeout = lb.FormatDuration(a.Timeout)
	}
	if a.MaxStreamDuration != 0 {
		out.MaxStreamDuration = &msd{lb.FormatDuration(a.MaxStreamDuration)}
	}
	return json.Marshal(out)
}
