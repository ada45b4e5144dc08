package route_test

import (
	"errors"
	"math/bits"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/route"
)

// hashTable parses a one-route table whose action has the given
// hashPolicy JSON list.
func hashTable(t testing.TB, policies string) (*route.Table, []string) {
	t.Helper()
	tab, unknown, err := route.Parse([]byte(`{"virtualHosts":[{"domains":["*"],"routes":[{"match":{"prefix":"/"},"route":{"cluster":"a","hashPolicy":` + policies + `}}]}]}`))
	if err != nil {
		t.Fatalf("parse %s: %v", policies, err)
	}
	return tab, unknown
}

func rotl(x uint64) uint64 { return bits.RotateLeft64(x, 1) }

// A header policy hashes the header's value with XXH64 (seed 0): "abc" is
// XXH64's published test vector. Several values are joined with ",", and
// a request without the header has no hash.
func TestHashHeaderIsXXH64OfTheValue(t *testing.T) {
	tab, _ := hashTable(t, `[{"header":{"headerName":"x-user"}}]`)
	h := tab.Hasher(0)
	if h == nil {
		t.Fatal("no hasher for a route with a hash policy")
	}
	for _, tc := range []struct {
		md   lb.Metadata
		want uint64
		ok   bool
	}{
		{http.Header{"X-User": {"abc"}}, 0x44bc2cf5ad770999, true},
		{http.Header{"X-User": {"a", "b"}}, xxhash.Sum64String("a,b"), true},
		{getOnly{"x-user": "abc"}, 0x44bc2cf5ad770999, true},
		{http.Header{"X-Other": {"abc"}}, 0, false},
		{nil, 0, false},
	} {
		got, ok := h.Hash(&route.Request{Headers: tc.md}, 7)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: hash %#x, %v; want %#x, %v", tc.md, got, ok, tc.want, tc.ok)
		}
	}
}

// getOnly is an lb.Metadata with Get only (lower-case keys).
type getOnly map[string]string

func (g getOnly) Get(k string) string { return g[strings.ToLower(k)] }

// A route without hash policies has no Hasher.
func TestNoHashPolicyNoHasher(t *testing.T) {
	tab, _, err := route.Parse([]byte(`{"virtualHosts":[{"domains":["*"],"routes":[{"match":{"prefix":"/"},"route":{"cluster":"a"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if h := tab.Hasher(0); h != nil {
		t.Fatalf("Hasher(0) = %v, want nil", h)
	}
	if h := tab.Hasher(5); h != nil {
		t.Fatalf("Hasher(5) = %v, want nil", h)
	}
}

// A42: policies combine as rotl(hash, 1) ^ policy hash, in order; a
// terminal policy that gives a hash ends the list, one that gives none
// does not; io.grpc.channel_id gives the channel's id.
func TestHashCombinesAndStopsAtTerminal(t *testing.T) {
	a, b := xxhash.Sum64String("va"), xxhash.Sum64String("vb")
	const chID = 0x1234
	req := &route.Request{Headers: http.Header{"X-A": {"va"}, "X-B": {"vb"}}}
	for _, tc := range []struct {
		policies string
		want     uint64
	}{
		{`[{"header":{"headerName":"x-a"}},{"header":{"headerName":"x-b"}}]`, rotl(a) ^ b},
		{`[{"header":{"headerName":"x-b"}},{"header":{"headerName":"x-a"}}]`, rotl(b) ^ a},
		{`[{"header":{"headerName":"x-a"}},{"header":{"headerName":"x-a"}}]`, rotl(a) ^ a}, // duplicates do not cancel
		{`[{"header":{"headerName":"x-a"},"terminal":true},{"header":{"headerName":"x-b"}}]`, a},
		{`[{"header":{"headerName":"x-missing"},"terminal":true},{"header":{"headerName":"x-b"}}]`, b},
		{`[{"header":{"headerName":"x-a"}},{"header":{"headerName":"x-missing"},"terminal":true},{"header":{"headerName":"x-b"}}]`, rotl(a) ^ b},
		{`[{"filterState":{"key":"io.grpc.channel_id"}}]`, chID},
		{`[{"filterState":{"key":"io.grpc.channel_id"},"terminal":true},{"header":{"headerName":"x-a"}}]`, chID},
		{`[{"cookie":{"name":"c"},"terminal":true},{"header":{"headerName":"x-a"}}]`, a},
	} {
		tab, _ := hashTable(t, tc.policies)
		got, ok := tab.Hasher(0).Hash(req, chID)
		if !ok || got != tc.want {
			t.Errorf("%s: %#x, %v; want %#x", tc.policies, got, ok, tc.want)
		}
	}
}

// A42: cookie, connection_properties, query_parameter and filter state
// keys other than io.grpc.channel_id are accepted and give no hash, nor
// does a "-bin" header; a route whose policies all give none has a
// Hasher that reports no hash (the caller draws a random one). Their
// fields are listed as ignored.
func TestIgnoredHashPoliciesGiveNoHash(t *testing.T) {
	tab, unknown := hashTable(t, `[{"cookie":{"name":"session","ttl":"1s"}},{"connectionProperties":{"sourceIp":true}},
		{"queryParameter":{"name":"q"}},{"filterState":{"key":"other"}},{"header":{"headerName":"x-key-bin"}}]`)
	req := &route.Request{Headers: http.Header{"X-Key-Bin": {"AAEC"}, "Cookie": {"session=1"}}, Path: "/?q=1"}
	if h, ok := tab.Hasher(0).Hash(req, 9); ok {
		t.Fatalf("ignored policies gave a hash %#x", h)
	}
	want := "virtualHosts[0].routes[0].route.hashPolicy[0].cookie.name"
	if len(unknown) == 0 || unknown[0] != want {
		t.Fatalf("unknown = %q, want %s first", unknown, want)
	}
}

// The pseudo-headers read the request as route matching does.
func TestHashPseudoHeaders(t *testing.T) {
	req := &route.Request{Authority: "svc:80", Method: "GET", Path: "/p"}
	for name, v := range map[string]string{":path": "/p", ":authority": "svc:80", "host": "svc:80", ":method": "GET"} {
		tab, _ := hashTable(t, `[{"header":{"headerName":"`+name+`"}}]`)
		if got, ok := tab.Hasher(0).Hash(req, 0); !ok || got != xxhash.Sum64String(v) {
			t.Errorf("%s: %#x, %v; want XXH64(%q)", name, got, ok, v)
		}
	}
}

// A regex rewrite replaces every match with the substitution, in RE2's
// syntax (\1 a group, \\ a backslash, $ itself), before hashing.
func TestHashRegexRewrite(t *testing.T) {
	for _, tc := range []struct {
		pattern, sub, value, want string
	}{
		{`^/users/([0-9]+)/.*$`, `\1`, "/users/42/cart", "42"},
		{`[0-9]`, `#`, "a1b22", "a#b##"},
		{`(a)(b)?`, `<\2\1\0>$1\\`, "ac", `<aa>$1\c`},
		{`x`, `y`, "none", "none"},
	} {
		tab, _ := hashTable(t, `[{"header":{"headerName":"x-k","regexRewrite":{"pattern":{"regex":`+quote(tc.pattern)+`},"substitution":`+quote(tc.sub)+`}}}]`)
		got, ok := tab.Hasher(0).Hash(&route.Request{Headers: http.Header{"X-K": {tc.value}}}, 0)
		if !ok || got != xxhash.Sum64String(tc.want) {
			t.Errorf("%s -> %s on %q: %#x, want XXH64(%q)", tc.pattern, tc.sub, tc.value, got, tc.want)
		}
	}
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Bad hash policies are refused with the path of the field.
func TestHashPolicyRejects(t *testing.T) {
	const at = "virtualHosts[0].routes[0].route.hashPolicy[0]"
	for _, tc := range []struct{ policies, path string }{
		{`[{"header":{"headerName":""}}]`, at + ".header.headerName"},
		{`[{"header":{}}]`, at + ".header.headerName"},
		{`[{"header":{"headerName":"x","regexRewrite":{"pattern":{"regex":"(a"}}}}]`, at + ".header.regexRewrite.pattern.regex"},
		{`[{"header":{"headerName":"x","regexRewrite":{"substitution":"y"}}}]`, at + ".header.regexRewrite.pattern"},
		{`[{"header":{"headerName":"x","regexRewrite":{"pattern":{"regex":"(a)"},"substitution":"\\2"}}}]`, at + ".header.regexRewrite.substitution"},
		{`[{"header":{"headerName":"x","regexRewrite":{"pattern":{"regex":"a"},"substitution":"\\x"}}}]`, at + ".header.regexRewrite.substitution"},
		{`[{"header":{"headerName":"x","regexRewrite":{"pattern":{"regex":"a"},"substitution":"\\"}}}]`, at + ".header.regexRewrite.substitution"},
		{`[{"terminal":true}]`, at},
		{`[{"header":{"headerName":"x"},"cookie":{}}]`, at},
		{`[{"header":{"headerName":"x"},"terminal":"yes"}]`, at + ".terminal"},
		{`[{"filterState":{"key":1}}]`, at + ".filterState.key"},
		{`[{"cookie":[]}]`, at + ".cookie"},
		{`{}`, "virtualHosts[0].routes[0].route.hashPolicy"},
	} {
		_, _, err := route.Parse([]byte(`{"virtualHosts":[{"domains":["*"],"routes":[{"match":{"prefix":"/"},"route":{"cluster":"a","hashPolicy":` + tc.policies + `}}]}]}`))
		var ce *lb.ConfigError
		if !errors.As(err, &ce) || ce.Path != tc.path {
			t.Errorf("%s: %v, want an error at %s", tc.policies, err, tc.path)
		}
	}
}

// Hashing a header (one value or several) or the channel id allocates
// nothing.
func TestHashDoesNotAllocate(t *testing.T) {
	tab, _ := hashTable(t, `[{"header":{"headerName":"x-a"}},{"header":{"headerName":"x-b"}},{"filterState":{"key":"io.grpc.channel_id"}}]`)
	h := tab.Hasher(0)
	req := &route.Request{Headers: http.Header{"X-A": {"one"}, "X-B": {"two", "three"}}}
	if n := testing.AllocsPerRun(100, func() { _, _ = h.Hash(req, 1) }); n != 0 {
		t.Fatalf("Hash allocates %v times", n)
	}
}

// refHash is the hash of a request by a list of hash policies, written
// from gRFC A42's text (and the choice that a terminal policy ends the
// list once it gives a hash, as grpc-go does), independently of Hasher:
// header values joined with ",", the pseudo-headers read from the
// request as route matching reads them, "-bin" headers and unsupported policies
// giving nothing, RE2 rewrites done by hand, XXH64, and Envoy's
// combination.
func refHash(ps []route.HashPolicy, req *route.Request, channelID uint64) (uint64, bool) {
	headers, _ := req.Headers.(http.Header)
	var hash uint64
	var have bool
	for _, p := range ps {
		var h uint64
		var ok bool
		switch {
		case p.Header != nil:
			name := strings.ToLower(p.Header.HeaderName)
			vs := headers[http.CanonicalHeaderKey(name)]
			pseudo := map[string]string{":method": req.Method, ":authority": req.Authority, "host": req.Authority, ":path": req.Path}
			if v, ok := pseudo[name]; ok {
				vs = nil
				if v != "" {
					vs = []string{v}
				}
			}
			if strings.HasSuffix(name, "-bin") || len(vs) == 0 {
				break
			}
			v := strings.Join(vs, ",")
			if rr := p.Header.RegexRewrite; rr != nil {
				v = refRewrite(regexp.MustCompile(rr.Pattern.Regex), rr.Substitution, v)
			}
			h, ok = xxhash.Sum64String(v), true
		case p.FilterState != nil && p.FilterState.Key == "io.grpc.channel_id":
			h, ok = channelID, true
		}
		if !ok {
			continue
		}
		if have {
			hash = hash<<1 | hash>>63 // "rotate_left_shift(hash, 1)"
			hash ^= h
		} else {
			hash = h
		}
		have = true
		if p.Terminal {
			break
		}
	}
	return hash, have
}

// refRewrite replaces every match of re in v by sub, RE2's way.
func refRewrite(re *regexp.Regexp, sub, v string) string {
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(v, -1) {
		b.WriteString(v[last:m[0]])
		for i := 0; i < len(sub); i++ {
			if sub[i] != '\\' {
				b.WriteByte(sub[i])
				continue
			}
			i++
			if sub[i] == '\\' {
				b.WriteByte('\\')
				continue
			}
			if g := int(sub[i] - '0'); m[2*g] >= 0 {
				b.WriteString(v[m[2*g]:m[2*g+1]])
			}
		}
		last = m[1]
	}
	b.WriteString(v[last:])
	return b.String()
}

var (
	genHashHeader = rapid.SampledFrom([]string{"x-a", "X-B", "x-c-bin", "x-missing"})
	genRewrite    = rapid.SampledFrom([]route.RegexRewrite{
		{Pattern: &route.RegexMatcher{Regex: `[0-9]+`}, Substitution: `#`},
		{Pattern: &route.RegexMatcher{Regex: `^(\w)(\w*)$`}, Substitution: `\2\1$\\`},
		{Pattern: &route.RegexMatcher{Regex: `,`}, Substitution: `\0\0`},
		{Pattern: &route.RegexMatcher{Regex: `z*`}, Substitution: `-`},
	})
)

func genHashPolicy(t *rapid.T) route.HashPolicy {
	p := route.HashPolicy{Terminal: rapid.Bool().Draw(t, "terminal")}
	switch rapid.IntRange(0, 5).Draw(t, "kind") {
	case 0, 1, 2:
		p.Header = &route.HeaderHash{HeaderName: genHashHeader.Draw(t, "header")}
		if rapid.Bool().Draw(t, "rewrite") {
			rr := genRewrite.Draw(t, "rewrite rule")
			p.Header.RegexRewrite = &rr
		}
	case 3:
		p.FilterState = &route.FilterStateHash{Key: rapid.SampledFrom([]string{"io.grpc.channel_id", "x"}).Draw(t, "key")}
	case 4:
		p.Cookie = &route.IgnoredHash{}
	case 5:
		p.QueryParameter = &route.IgnoredHash{}
	}
	return p
}

// TestPropertyHashFollowsA42: for random lists of hash policies and
// random requests, Hasher.Hash equals the reference, and the same request
// always hashes the same.
func TestPropertyHashFollowsA42(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ps := rapid.SliceOfN(rapid.Custom(genHashPolicy), 1, 5).Draw(t, "policies")
		cfg := &route.Config{VirtualHosts: []route.VirtualHost{{Domains: []string{"*"}, Routes: []route.Route{{
			Match: route.Match{Prefix: new(string)}, Action: &route.Action{Cluster: "a", HashPolicies: ps}}}}}}
		tab, err := route.Compile(cfg)
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		headers := http.Header{}
		for _, name := range []string{"x-a", "x-b", "x-c-bin"} {
			for _, v := range rapid.SliceOfN(rapid.SampledFrom([]string{"", "u1", "42", "ab", "z"}), 0, 2).Draw(t, name) {
				headers.Add(name, v)
			}
		}
		chID := rapid.Uint64().Draw(t, "channel id")
		req := &route.Request{Headers: headers}
		got, ok := tab.Hasher(0).Hash(req, chID)
		want, wok := refHash(ps, req, chID)
		if got != want || ok != wok {
			t.Fatalf("Hash = %#x, %v; the reference %#x, %v", got, ok, want, wok)
		}
		if again, _ := tab.Hasher(0).Hash(&route.Request{Headers: headers.Clone()}, chID); again != got {
			t.Fatalf("the same request hashed %#x, then %#x", got, again)
		}
	})
}
