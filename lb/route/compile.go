package route

import (
	"errors"
	"math"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"

	"github.com/lbkit/lbkit/lb"
)

// Table is a compiled, validated route configuration: what [Table.Find]
// matches requests against. It is immutable and safe for concurrent use.
type Table struct {
	cfg Config
	// domains lists every (domain, virtual host) pair in the order they
	// are tried: exact, suffix wildcard, prefix wildcard, then "*"; longer
	// patterns first within a kind, then configuration order.
	domains []domain
	// hosts holds each virtual host's compiled routes.
	hosts []*hostIndex
	// exactHosts maps every exact domain, in lower case, to its virtual
	// host (the first that has it); the domains' order puts exact domains
	// first, so a lower-case authority found here needs nothing else.
	exactHosts map[string]int
	// clusters lists every cluster a route names, in order of first
	// mention.
	clusters []string
	// nroutes counts the routes of every virtual host.
	nroutes int
	// hashers holds each route's compiled hash policies by index; nil
	// for a route without any.
	hashers []*Hasher
}

// Compile validates cfg by gRFC A28's rules and compiles it into a
// [Table]. The errors, each an [*lb.ConfigError] whose path is that of the
// JSON form (`virtualHosts[0].routes[1].route.weightedClusters`), reject:
//   - a virtual host with no domain, or a domain that is empty or has a
//     "*" other than as its whole, first or last character;
//   - a route whose match has no path specifier, or more than one
//     (prefix, path, safeRegex);
//   - a safeRegex or safeRegexMatch that RE2 (Go's regexp) rejects;
//   - a header matcher with no name, with no specifier or more than one,
//     or with an empty prefix, suffix or contains string;
//   - a runtime fraction with an unknown denominator;
//   - a route with no action or one lbkit does not support (a redirect,
//     a direct response, cluster_header), naming it;
//   - an action naming no cluster, or both a cluster and weighted
//     clusters; a weighted cluster without a name, named twice, or a
//     weighted-cluster total of 0 or above 2^32-1;
//   - a weighted-cluster total that differs from a totalWeight given;
//   - a negative timeout;
//   - a hash policy with no specifier or several (header, filterState,
//     cookie, connectionProperties, queryParameter), a header policy
//     with an empty header name, a regex rewrite without a pattern, with
//     a pattern RE2 rejects, or with a substitution RE2 would refuse (a
//     backslash before anything but a digit or a backslash, or a group
//     the pattern does not have).
//
// The JSON reader also rejects the unsafe "regex" and "regexMatch" (gRFC
// A28). A route with query parameter matchers is kept but never matches
// (gRFC A28). Hash policies gRFC A42 does not support (cookie,
// connectionProperties, queryParameter, a filter state key other than
// [ChannelIDKey]) are kept and give no hash ([HashPolicy]).
func Compile(cfg *Config) (*Table, error) {
	t := &Table{cfg: cloneConfig(cfg)}
	seen := map[string]bool{}
	for i, vh := range t.cfg.VirtualHosts {
		at := "virtualHosts[" + strconv.Itoa(i) + "]"
		if len(vh.Domains) == 0 {
			return nil, lb.ConfigErrorf(at+".domains", "a virtual host needs at least one domain")
		}
		for j, d := range vh.Domains {
			dm, err := parseDomain(d, i)
			if err != nil {
				return nil, lb.PrefixConfigError(at+".domains["+strconv.Itoa(j)+"]", err)
			}
			t.domains = append(t.domains, dm)
		}
		routes := make([]compiledRoute, len(vh.Routes))
		for j := range vh.Routes {
			r := &vh.Routes[j]
			rat := at + ".routes[" + strconv.Itoa(j) + "]"
			hasher, err := compileRoute(&routes[j], r)
			if err != nil {
				return nil, lb.PrefixConfigError(rat, err)
			}
			t.hashers = append(t.hashers, hasher)
			routes[j].index = t.nroutes
			t.nroutes++
			for _, c := range r.Action.clusters() {
				if !seen[c] {
					seen[c] = true
					t.clusters = append(t.clusters, c)
				}
			}
		}
		t.hosts = append(t.hosts, newHostIndex(routes))
	}
	sortDomains(t.domains)
	t.exactHosts = map[string]int{}
	for _, d := range t.domains {
		if _, dup := t.exactHosts[strings.ToLower(d.pattern)]; d.kind == domainExact && !dup {
			t.exactHosts[strings.ToLower(d.pattern)] = d.host
		}
	}
	numberKeys(t.hosts)
	return t, nil
}

// numberKeys gives each header name of the table a slot of a request's
// header cache (see headerCache), in order of first use.
func numberKeys(hosts []*hostIndex) {
	slots := map[string]uint8{}
	for _, x := range hosts {
		for i := range x.routes {
			for j := range x.routes[i].headers {
				h := &x.routes[i].headers[j]
				s, ok := slots[h.key]
				if !ok {
					s = uint8(min(len(slots), 255))
					slots[h.key] = s
				}
				h.slot = s
			}
		}
	}
}

// cloneConfig copies cfg's slices, so the table does not share them with
// its caller. The pointers to strings and numbers are shared: nothing
// changes what they point to.
func cloneConfig(cfg *Config) Config {
	c := *cfg
	c.VirtualHosts = append([]VirtualHost(nil), cfg.VirtualHosts...)
	for i := range c.VirtualHosts {
		vh := &c.VirtualHosts[i]
		vh.Domains = append([]string(nil), vh.Domains...)
		vh.Routes = append([]Route(nil), vh.Routes...)
		for j := range vh.Routes {
			if a := vh.Routes[j].Action; a != nil {
				ac := *a
				if a.WeightedClusters != nil {
					ac.WeightedClusters = &WeightedClusters{Clusters: append([]ClusterWeight(nil), a.WeightedClusters.Clusters...), TotalWeight: a.WeightedClusters.TotalWeight}
				}
				ac.HashPolicies = append([]HashPolicy(nil), a.HashPolicies...)
				vh.Routes[j].Action = &ac
			}
			vh.Routes[j].Match.Headers = append([]HeaderMatcher(nil), vh.Routes[j].Match.Headers...)
		}
	}
	return c
}

// Config returns the configuration the table was compiled from. It must
// not be modified.
func (t *Table) Config() *Config { return &t.cfg }

// Clusters returns every cluster the routes name, in order of first
// mention. It must not be modified.
func (t *Table) Clusters() []string { return t.clusters }

// Len returns the number of routes, over every virtual host: the indexes
// [Table.Find] returns are below it.
func (t *Table) Len() int { return t.nroutes }

// Route returns the route of index i (see [Match.Index]).
func (t *Table) Route(i int) *Route {
	for h, x := range t.hosts {
		if i < len(x.routes) {
			return &t.cfg.VirtualHosts[h].Routes[i]
		}
		i -= len(x.routes)
	}
	return nil
}

// clusters returns the clusters a validated action names.
func (a *Action) clusters() []string {
	if a.WeightedClusters == nil {
		return []string{a.Cluster}
	}
	names := make([]string, len(a.WeightedClusters.Clusters))
	for i, c := range a.WeightedClusters.Clusters {
		names[i] = c.Name
	}
	return names
}

type pathKind uint8

const (
	pathPrefix pathKind = iota
	pathExact
	pathRegex
)

// compiledRoute is a route's match, ready to run.
type compiledRoute struct {
	kind     pathKind
	pattern  string
	fold     bool
	re       *regexp.Regexp
	headers  []headerMatcher
	fraction uint32 // per million
	hasFrac  bool
	// never is set for a route with query parameter matchers, which
	// never matches (gRFC A28).
	never bool
	// index is the route's index over the whole table.
	index int
}

var errNoAction = errors.New("the route has no action lbkit supports (want \"route\" with a cluster or weighted clusters; redirect and direct_response are not supported)")

// compileRoute compiles r's match into cr and validates its action,
// returning the action's hash policies compiled.
func compileRoute(cr *compiledRoute, r *Route) (*Hasher, error) {
	if err := compileMatch(cr, &r.Match); err != nil {
		return nil, lb.PrefixConfigError("match", err)
	}
	if r.Action == nil {
		return nil, lb.ConfigErrorf("route", "%w", errNoAction)
	}
	if err := validateAction(r.Action); err != nil {
		return nil, lb.PrefixConfigError("route", err)
	}
	h, err := compileHashPolicies(r.Action.HashPolicies)
	return h, lb.PrefixConfigError("route", err)
}

func compileMatch(cr *compiledRoute, m *Match) error {
	n := 0
	var regex *string
	if m.SafeRegex != nil {
		regex = &m.SafeRegex.Regex
	}
	for _, p := range []struct {
		s    *string
		kind pathKind
	}{{m.Prefix, pathPrefix}, {m.Path, pathExact}, {regex, pathRegex}} {
		if p.s != nil {
			n++
			cr.kind, cr.pattern = p.kind, *p.s
		}
	}
	switch {
	case n == 0:
		return lb.ConfigErrorf("", "want one path specifier (prefix, path or safeRegex), got none")
	case n > 1:
		return lb.ConfigErrorf("", "want one path specifier (prefix, path or safeRegex), got %d", n)
	}
	cr.fold = m.CaseSensitive != nil && !*m.CaseSensitive
	cr.never = len(m.QueryParameters) > 0
	if cr.kind == pathRegex {
		re, err := compileRegex(cr.pattern)
		if err != nil {
			return lb.PrefixConfigError("safeRegex.regex", err)
		}
		cr.re = re
	}
	for i := range m.Headers {
		hm, err := compileHeader(&m.Headers[i])
		if err != nil {
			return lb.PrefixConfigError("headers["+strconv.Itoa(i)+"]", err)
		}
		cr.headers = append(cr.headers, hm)
	}
	if rf := m.RuntimeFraction; rf != nil {
		f := rf.DefaultValue
		switch f.Denominator {
		case "", Hundred, TenThousand, Million:
		default:
			return lb.ConfigErrorf("runtimeFraction.defaultValue.denominator", "want %s, %s or %s, got %q", Hundred, TenThousand, Million, f.Denominator)
		}
		cr.fraction, cr.hasFrac = f.perMillion(), true
	}
	return nil
}

// compileRegex compiles an Envoy safe regex, which must match a whole
// value: RE2 syntax, as Go's regexp implements it.
func compileRegex(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(`^(?:` + s + `)$`)
	if err != nil {
		// Compile s alone for an error that does not mention the anchors.
		if _, err2 := regexp.Compile(s); err2 != nil {
			err = err2
		}
		return nil, lb.ConfigErrorf("", "invalid RE2 regex %q: %v", s, err)
	}
	return re, nil
}

func validateAction(a *Action) error {
	if a.Unsupported != "" {
		return lb.ConfigErrorf(a.Unsupported, "unsupported cluster specifier %q", a.Unsupported)
	}
	if a.Timeout < 0 {
		return lb.ConfigErrorf("timeout", "must not be negative, got %v", a.Timeout)
	}
	if a.WeightedClusters == nil {
		if a.Cluster == "" {
			return lb.ConfigErrorf("cluster", "the route names no cluster (want cluster or weightedClusters)")
		}
		return nil
	}
	if a.Cluster != "" {
		return lb.ConfigErrorf("", "want one of cluster and weightedClusters, got both")
	}
	wc := a.WeightedClusters.Clusters
	if len(wc) == 0 {
		return lb.ConfigErrorf("weightedClusters.clusters", "no cluster")
	}
	var total uint64
	names := make(map[string]bool, len(wc))
	for i, c := range wc {
		at := "weightedClusters.clusters[" + strconv.Itoa(i) + "]"
		switch {
		case c.Name == "":
			return lb.ConfigErrorf(at+".name", "empty cluster name")
		case names[c.Name]:
			return lb.ConfigErrorf(at+".name", "cluster %q named twice", c.Name)
		}
		names[c.Name] = true
		total += uint64(c.Weight)
	}
	switch tw := a.WeightedClusters.TotalWeight; {
	case tw != nil && uint64(*tw) != total:
		return lb.ConfigErrorf("weightedClusters.totalWeight", "the weights add up to %d, not %d", total, *tw)
	case total == 0:
		return lb.ConfigErrorf("weightedClusters", "the weights add up to 0")
	case total > math.MaxUint32:
		return lb.ConfigErrorf("weightedClusters", "the weights add up to %d, above %d", total, uint32(math.MaxUint32))
	}
	return nil
}

// domain is one domain of a virtual host, compiled.
type domain struct {
	kind    domainKind
	pattern string // without the "*"
	host    int    // index of the virtual host
}

type domainKind uint8

// Domain kinds, in the order they are tried.
const (
	domainExact domainKind = iota
	domainSuffix
	domainPrefix
	domainAny
)

func parseDomain(d string, host int) (domain, error) {
	n := strings.Count(d, "*")
	switch {
	case d == "":
		return domain{}, lb.ConfigErrorf("", "empty domain")
	case d == "*":
		return domain{kind: domainAny, host: host}, nil
	case n == 0:
		return domain{kind: domainExact, pattern: d, host: host}, nil
	case n == 1 && d[0] == '*':
		return domain{kind: domainSuffix, pattern: d[1:], host: host}, nil
	case n == 1 && d[len(d)-1] == '*':
		return domain{kind: domainPrefix, pattern: d[:len(d)-1], host: host}, nil
	}
	return domain{}, lb.ConfigErrorf("", "invalid domain %q: a wildcard \"*\" may only be the whole domain, its first or its last character", d)
}

// sortDomains orders domains by kind, then longer pattern first, keeping
// configuration order among equals (insertion sort: stable, and the
// lists are short).
func sortDomains(ds []domain) {
	less := func(a, b domain) bool {
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return len(a.pattern) > len(b.pattern)
	}
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && less(ds[j], ds[j-1]); j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// headerMatcher is a compiled [HeaderMatcher].
type headerMatcher struct {
	// key is the name in canonical MIME form, so that http.Header's Get
	// finds it without converting it; lower is the name in lower case,
	// for pseudo-headers and the -bin rule.
	key, lower string
	kind       headerKind
	value      string
	re         *regexp.Regexp
	start, end int64
	present    bool
	source     headerSource
	slot       uint8 // the name's slot in a request's headerCache
	fold       bool
	invert     bool
}

// headerSource is where a header matcher's value comes from.
type headerSource uint8

const (
	fromHeaders headerSource = iota
	fromMethod
	fromAuthority
	fromPath
	fromNothing
)

// headerSourceOf returns where the value of the header named lower (in
// lower case) comes from.
func headerSourceOf(lower string) headerSource {
	switch {
	case lower == ":method":
		return fromMethod
	case lower == ":authority" || lower == "host":
		return fromAuthority
	case lower == ":path":
		return fromPath
	case strings.HasSuffix(lower, "-bin"):
		return fromNothing // never present (gRFC A28)
	}
	return fromHeaders
}

type headerKind uint8

const (
	headerExact headerKind = iota
	headerRegex
	headerRange
	headerPresent
	headerPrefix
	headerSuffix
	headerContains
)

func compileHeader(h *HeaderMatcher) (headerMatcher, error) {
	hm := headerMatcher{lower: strings.ToLower(h.Name), invert: h.InvertMatch}
	if h.Name == "" {
		return hm, lb.ConfigErrorf("name", "empty header name")
	}
	hm.key = textproto.CanonicalMIMEHeaderKey(h.Name)
	hm.source = headerSourceOf(hm.lower)
	n, field := 0, ""
	set := func(k headerKind, s *string, name string) {
		if s != nil {
			n++
			hm.kind, hm.value, field = k, *s, name
		}
	}
	set(headerExact, h.ExactMatch, "exactMatch")
	if h.SafeRegexMatch != nil {
		set(headerRegex, &h.SafeRegexMatch.Regex, "safeRegexMatch.regex")
	}
	set(headerPrefix, h.PrefixMatch, "prefixMatch")
	set(headerSuffix, h.SuffixMatch, "suffixMatch")
	set(headerContains, h.ContainsMatch, "containsMatch")
	if h.RangeMatch != nil {
		n++
		hm.kind, hm.start, hm.end = headerRange, h.RangeMatch.Start, h.RangeMatch.End
	}
	if h.PresentMatch != nil {
		n++
		hm.kind, hm.present = headerPresent, *h.PresentMatch
	}
	if sm := h.StringMatch; sm != nil {
		m := 0
		sset := func(k headerKind, s *string, name string) {
			if s != nil {
				m++
				set(k, s, "stringMatch."+name)
			}
		}
		sset(headerExact, sm.Exact, "exact")
		sset(headerPrefix, sm.Prefix, "prefix")
		sset(headerSuffix, sm.Suffix, "suffix")
		sset(headerContains, sm.Contains, "contains")
		if sm.SafeRegex != nil {
			sset(headerRegex, &sm.SafeRegex.Regex, "safeRegex.regex")
		}
		if m != 1 {
			return hm, lb.ConfigErrorf("stringMatch", "want one of exact, prefix, suffix, contains and safeRegex, got %d", m)
		}
		hm.fold = sm.IgnoreCase && hm.kind != headerRegex
	}
	if n != 1 {
		return hm, lb.ConfigErrorf("", "want one header match specifier (exactMatch, safeRegexMatch, rangeMatch, presentMatch, prefixMatch, suffixMatch, containsMatch or stringMatch), got %d", n)
	}
	switch hm.kind {
	case headerRegex:
		re, err := compileRegex(hm.value)
		if err != nil {
			return hm, lb.PrefixConfigError(field, err)
		}
		hm.re = re
	case headerPrefix, headerSuffix, headerContains:
		if hm.value == "" {
			return hm, lb.ConfigErrorf(field, "must not be empty")
		}
	}
	return hm, nil
}
