package route_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/route"
	"pgregory.net/rapid"
)

// refFind is a reference matcher written from gRFC A28's text and the
// rules of route.Table.Find's documentation, as plainly as possible and
// independently of the Table: it reads the Config directly, every time.
// It returns the index over the whole table, or -1 and which miss.
func refFind(cfg *route.Config, req refRequest, rnd route.Source) (int, string) {
	// "find the element whose domains field most specifically matches":
	// exact > suffix wildcard > prefix wildcard > "*", longer beats
	// shorter within a kind, earlier beats later.
	best, bestRank, bestLen := -1, 99, -1
	for i, vh := range cfg.VirtualHosts {
		for _, d := range vh.Domains {
			rank, ok := refDomain(d, req.authority)
			if !ok {
				continue
			}
			if rank < bestRank || rank == bestRank && len(d) > bestLen {
				best, bestRank, bestLen = i, rank, len(d)
			}
		}
	}
	if best < 0 {
		return -1, "no virtual host"
	}
	base := 0
	for i := 0; i < best; i++ {
		base += len(cfg.VirtualHosts[i].Routes)
	}
	// "For each pick, a route is matched if all matching criteria are
	// matched. The first match wins."
	for j, r := range cfg.VirtualHosts[best].Routes {
		if refRoute(r.Match, req, rnd) {
			return base + j, ""
		}
	}
	return -1, "no route"
}

func refDomain(d, host string) (rank int, ok bool) {
	d, host = strings.ToLower(d), strings.ToLower(host)
	switch {
	case d == "*":
		return 3, true
	case strings.HasPrefix(d, "*"):
		return 1, len(host) > len(d)-1 && strings.HasSuffix(host, d[1:])
	case strings.HasSuffix(d, "*"):
		return 2, len(host) > len(d)-1 && strings.HasPrefix(host, d[:len(d)-1])
	}
	return 0, d == host
}

func refRoute(m route.Match, req refRequest, rnd route.Source) bool {
	// "the entire route containing [query_parameters] will be ignored"
	if len(m.QueryParameters) > 0 {
		return false
	}
	caseInsensitive := m.CaseSensitive != nil && !*m.CaseSensitive
	path := req.path
	switch {
	case m.Prefix != nil:
		p := *m.Prefix
		if caseInsensitive {
			p, path = strings.ToLower(p), strings.ToLower(path)
		}
		if !strings.HasPrefix(path, p) {
			return false
		}
	case m.Path != nil:
		p := *m.Path
		if caseInsensitive {
			p, path = strings.ToLower(p), strings.ToLower(path)
		}
		if path != p {
			return false
		}
	default:
		if !refFullMatch(m.SafeRegex.Regex, path) {
			return false
		}
	}
	for _, h := range m.Headers {
		if !refHeader(h, req) {
			return false
		}
	}
	if m.RuntimeFraction != nil {
		f := m.RuntimeFraction.DefaultValue
		scale := map[string]uint64{"": 10_000, route.Hundred: 10_000, route.TenThousand: 100, route.Million: 1}[f.Denominator]
		return rnd.Uint64()%1_000_000 < min(uint64(f.Numerator)*scale, 1_000_000)
	}
	return true
}

// refFullMatch: the leftmost-longest match of a regex covers the whole
// value exactly when some match does.
func refFullMatch(expr, s string) bool {
	re := regexp.MustCompile(expr)
	re.Longest()
	loc := re.FindStringIndex(s)
	return loc != nil && loc[0] == 0 && loc[1] == len(s)
}

func refHeader(h route.HeaderMatcher, req refRequest) bool {
	name := strings.ToLower(h.Name)
	var vals []string
	switch name {
	case ":method":
		vals = nonEmpty(req.method)
	case ":authority", "host":
		vals = nonEmpty(req.authority)
	case ":path":
		vals = nonEmpty(req.path)
	default:
		if !strings.HasSuffix(name, "-bin") {
			for k, vs := range req.headers {
				if strings.ToLower(k) == name {
					vals = append(vals, vs...)
				}
			}
		}
	}
	if h.PresentMatch != nil {
		return (len(vals) > 0) == *h.PresentMatch != h.InvertMatch
	}
	if len(vals) == 0 {
		return false
	}
	v := strings.Join(vals, ",")
	// The string matchers, in either form; ignoreCase only in stringMatch.
	exact, prefix, suffix, contains, regex := h.ExactMatch, h.PrefixMatch, h.SuffixMatch, h.ContainsMatch, h.SafeRegexMatch
	ignoreCase := false
	if sm := h.StringMatch; sm != nil {
		exact, prefix, suffix, contains, regex, ignoreCase = sm.Exact, sm.Prefix, sm.Suffix, sm.Contains, sm.SafeRegex, sm.IgnoreCase
	}
	lower := func(s *string) string {
		if ignoreCase {
			v = strings.ToLower(v)
			return strings.ToLower(*s)
		}
		return *s
	}
	var ok bool
	switch {
	case exact != nil:
		ok = v == lower(exact)
	case regex != nil:
		ok = refFullMatch(regex.Regex, v)
	case h.RangeMatch != nil:
		n, err := strconv.ParseInt(v, 10, 64)
		ok = err == nil && h.RangeMatch.Start <= n && n < h.RangeMatch.End
	case prefix != nil:
		ok = strings.HasPrefix(v, lower(prefix))
	case suffix != nil:
		ok = strings.HasSuffix(v, lower(suffix))
	case contains != nil:
		ok = strings.Contains(v, lower(contains))
	}
	return ok != h.InvertMatch
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

type refRequest struct {
	authority, method, path string
	headers                 map[string][]string // canonical keys
}

// seqSource is a deterministic Source: two with the same seed give the
// same numbers.
type seqSource struct{ x uint64 }

func (s *seqSource) Uint64() uint64 {
	s.x += 0x9e3779b97f4a7c15
	z := s.x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Generators over small alphabets, so that matches and near misses are
// common.
var (
	genPiece  = rapid.SampledFrom([]string{"", "/", "a", "A", "b", "/a", "/A", "/b", "ab", "."})
	genStr    = rapid.Custom(func(t *rapid.T) string { return strings.Join(rapid.SliceOfN(genPiece, 0, 3).Draw(t, "pieces"), "") })
	genHost   = rapid.SampledFrom([]string{"a.com", "A.COM", "b.a.com", "a.b", "x", "", "a.com:80"})
	genDomain = rapid.SampledFrom([]string{"a.com", "*.com", "*.a.com", "a.*", "*", "x", "a.com:80", "*a.com", "A.com"})
	genHName  = rapid.SampledFrom([]string{"x-a", "X-B", "x-c-bin", ":method", ":path", "host", ":authority"})
	genValue  = rapid.SampledFrom([]string{"", "1", "-3", "10", "a", "A", "ab", "/a", "GET", "POST", "a.com"})
	genRegex  = rapid.SampledFrom([]string{"a|ab", "/a.*", "(?i)/A", "[0-9]+", ".*", "", "a*", "/(a|b)/?"})
	genMethod = rapid.SampledFrom([]string{"GET", "POST", ""})
)

func ptr[T any](v T) *T { return &v }

func genHeader(t *rapid.T) route.HeaderMatcher {
	h := route.HeaderMatcher{Name: genHName.Draw(t, "name"), InvertMatch: rapid.Bool().Draw(t, "invert")}
	nonEmptyValue := rapid.SampledFrom([]string{"1", "a", "A", "ab", "/a", "GET", "0"})
	switch rapid.IntRange(0, 7).Draw(t, "kind") {
	case 0:
		h.ExactMatch = ptr(genValue.Draw(t, "exact"))
	case 1:
		h.SafeRegexMatch = &route.RegexMatcher{Regex: genRegex.Draw(t, "regex")}
	case 2:
		a, b := rapid.Int64Range(-5, 12).Draw(t, "start"), rapid.Int64Range(-5, 12).Draw(t, "end")
		h.RangeMatch = &route.Int64Range{Start: a, End: b}
	case 3:
		h.PresentMatch = ptr(rapid.Bool().Draw(t, "present"))
	case 4:
		h.PrefixMatch = ptr(nonEmptyValue.Draw(t, "prefix"))
	case 5:
		h.SuffixMatch = ptr(nonEmptyValue.Draw(t, "suffix"))
	case 6:
		h.ContainsMatch = ptr(nonEmptyValue.Draw(t, "contains"))
	case 7:
		sm := &route.StringMatcher{IgnoreCase: rapid.Bool().Draw(t, "ignoreCase")}
		switch rapid.IntRange(0, 4).Draw(t, "stringKind") {
		case 0:
			sm.Exact = ptr(genValue.Draw(t, "exact"))
		case 1:
			sm.Prefix = ptr(nonEmptyValue.Draw(t, "prefix"))
		case 2:
			sm.Suffix = ptr(nonEmptyValue.Draw(t, "suffix"))
		case 3:
			sm.Contains = ptr(nonEmptyValue.Draw(t, "contains"))
		case 4:
			sm.SafeRegex = &route.RegexMatcher{Regex: genRegex.Draw(t, "regex")}
		}
		h.StringMatch = sm
	}
	return h
}

func genRoute(t *rapid.T, i int) route.Route {
	var m route.Match
	switch rapid.IntRange(0, 2).Draw(t, "pathKind") {
	case 0:
		m.Prefix = ptr(genStr.Draw(t, "prefix"))
	case 1:
		m.Path = ptr(genStr.Draw(t, "path"))
	case 2:
		m.SafeRegex = &route.RegexMatcher{Regex: genRegex.Draw(t, "regex")}
	}
	if rapid.Bool().Draw(t, "setCase") {
		m.CaseSensitive = ptr(rapid.Bool().Draw(t, "caseSensitive"))
	}
	m.Headers = rapid.SliceOfN(rapid.Custom(genHeader), 0, 2).Draw(t, "headers")
	if rapid.IntRange(0, 9).Draw(t, "queryParameters") == 0 {
		m.QueryParameters = []route.QueryParameterMatcher{{Name: "q"}}
	}
	if rapid.IntRange(0, 3).Draw(t, "hasFraction") == 0 {
		m.RuntimeFraction = &route.RuntimeFraction{DefaultValue: route.Fraction{
			Numerator:   rapid.Uint32Range(0, 120).Draw(t, "numerator"),
			Denominator: rapid.SampledFrom([]string{"", route.Hundred, route.TenThousand, route.Million}).Draw(t, "denominator"),
		}}
	}
	return route.Route{Match: m, Action: &route.Action{Cluster: "c" + strconv.Itoa(i)}}
}

func genConfig(t *rapid.T) *route.Config {
	cfg := &route.Config{}
	n := 0
	for range rapid.IntRange(1, 4).Draw(t, "hosts") {
		vh := route.VirtualHost{Domains: rapid.SliceOfN(genDomain, 1, 3).Draw(t, "domains")}
		for range rapid.IntRange(0, 5).Draw(t, "routes") {
			vh.Routes = append(vh.Routes, genRoute(t, n))
			n++
		}
		cfg.VirtualHosts = append(cfg.VirtualHosts, vh)
	}
	return cfg
}

func genRequest(t *rapid.T) refRequest {
	r := refRequest{authority: genHost.Draw(t, "authority"), method: genMethod.Draw(t, "method"), path: genStr.Draw(t, "path"),
		headers: map[string][]string{}}
	for _, name := range []string{"X-A", "X-B", "X-C-Bin"} {
		if vs := rapid.SliceOfN(genValue, 0, 2).Draw(t, name); len(vs) > 0 {
			r.headers[name] = vs
		}
	}
	return r
}

// The Table finds, for random configurations and requests, the route the
// reference matcher written from gRFC A28's text finds, and misses when it
// misses.
func TestFindAgreesWithReference(t *testing.T) { checkAgainstReference(t, genConfig) }

// checkAgainstReference runs Find and the reference on configurations
// from gen and random requests.
func checkAgainstReference(t *testing.T, gen func(*rapid.T) *route.Config) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := gen(t)
		tab, err := route.Compile(cfg)
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		for range 20 {
			req := genRequest(t)
			seed := rapid.Uint64().Draw(t, "seed")
			want, miss := refFind(cfg, req, &seqSource{seed})
			got, gerr := tab.Find(&route.Request{Authority: req.authority, Method: req.method, Path: req.path, Headers: http.Header(req.headers)}, &seqSource{seed})
			if got != want {
				t.Fatalf("request %+v: Find gave %d (%v), the reference %d (%s)", req, got, gerr, want, miss)
			}
		}
	})
}

// genGroupedConfig makes configurations where many routes share a path
// specifier and match one header exactly, so that the index's groups
// (and their interplay with other routes) are exercised.
func genGroupedConfig(t *rapid.T) *route.Config {
	vh := route.VirtualHost{Domains: []string{"*"}}
	for i := range rapid.IntRange(0, 14).Draw(t, "routes") {
		r := genRoute(t, i)
		if rapid.IntRange(0, 3).Draw(t, "grouped") > 0 {
			r.Match = route.Match{
				Prefix:  ptr(rapid.SampledFrom([]string{"", "/a", "/"}).Draw(t, "prefix")),
				Headers: []route.HeaderMatcher{{Name: rapid.SampledFrom([]string{"x-a", "X-A", "x-b"}).Draw(t, "name"), ExactMatch: ptr(genValue.Draw(t, "value"))}},
			}
			if rapid.IntRange(0, 5).Draw(t, "exactPath") == 0 {
				r.Match.Prefix, r.Match.Path = nil, ptr("/a")
			}
		}
		vh.Routes = append(vh.Routes, r)
	}
	return &route.Config{VirtualHosts: []route.VirtualHost{vh}}
}

// Also for configurations whose routes form the index's header groups.
func TestFindAgreesWithReferenceOnGroups(t *testing.T) { checkAgainstReference(t, genGroupedConfig) }
