package route

import (
	"fmt"
	"math/bits"
	"net/http"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/lbkit/lbkit/lb"
)

// ChannelIDKey is the one filter state key gRFC A42 supports: a hash
// policy {"filterState": {"key": "io.grpc.channel_id"}} hashes every
// request of a channel to the same value, a random number drawn when the
// channel's routing policy is built.
const ChannelIDKey = "io.grpc.channel_id"

// HashPolicy is one of a route's hash policies (Envoy's
// RouteAction.HashPolicy, gRFC A42): what part of a request its hash comes
// from. Exactly one of Header, FilterState, Cookie, ConnectionProperties
// and QueryParameter is set.
//
// lbkit computes hashes from Header and from FilterState with the key
// [ChannelIDKey]. As gRFC A42 says, a cookie, connection properties, a
// query parameter or another filter state key is accepted and ignored:
// such a policy gives no hash for any request (a client has no cookies,
// no source address before it picks, and gRPC no query). So is a header
// whose name ends in "-bin" (gRFC A28's rule for binary headers).
type HashPolicy struct {
	// Header hashes a request header.
	Header *HeaderHash `json:"header,omitempty"`
	// FilterState with the key [ChannelIDKey] hashes the channel's random
	// id; other keys give no hash.
	FilterState *FilterStateHash `json:"filterState,omitempty"`
	// Cookie is Envoy's cookie policy: ignored (gRFC A42).
	Cookie *IgnoredHash `json:"cookie,omitempty"`
	// ConnectionProperties is Envoy's source address policy: ignored
	// (gRFC A42).
	ConnectionProperties *IgnoredHash `json:"connectionProperties,omitempty"`
	// QueryParameter is Envoy's query parameter policy: ignored (gRFC
	// A42).
	QueryParameter *IgnoredHash `json:"queryParameter,omitempty"`
	// Terminal, when this policy gives a hash, skips the policies after
	// it.
	Terminal bool `json:"terminal,omitempty"`
}

// HeaderHash is a header hash policy: the request header's value (its
// values joined with ","), rewritten when RegexRewrite is set, hashed with
// XXH64. A request without the header gets no hash from it. The header is
// read as route matching reads it ([HeaderMatcher]): ":method",
// ":authority", "host" and ":path" are the request's method, authority
// and path.
type HeaderHash struct {
	// HeaderName is the header's name, compared without case; required.
	HeaderName string `json:"headerName"`
	// RegexRewrite, when set, rewrites the value before it is hashed.
	RegexRewrite *RegexRewrite `json:"regexRewrite,omitempty"`
}

// RegexRewrite is Envoy's RegexMatchAndSubstitute: every match of Pattern
// in the value is replaced with Substitution, in which \0 to \9 stand for
// the match and its numbered groups and \\ for a backslash (RE2's syntax,
// as Envoy documents it; "$" is an ordinary character).
type RegexRewrite struct {
	// Pattern is an RE2 regular expression; required.
	Pattern *RegexMatcher `json:"pattern,omitempty"`
	// Substitution replaces each match.
	Substitution string `json:"substitution"`
}

// FilterStateHash is Envoy's filter state policy, by its key.
type FilterStateHash struct {
	// Key names the filter state; lbkit knows only [ChannelIDKey].
	Key string `json:"key"`
}

// IgnoredHash stands for a hash policy lbkit reads and ignores (gRFC A42);
// its fields are not kept.
type IgnoredHash struct{}

// hashKind is what a compiled hash policy reads.
type hashKind uint8

const (
	hashNothing hashKind = iota // an ignored policy: never a hash
	hashHeader
	hashChannelID
)

// compiledHash is a compiled [HashPolicy].
type compiledHash struct {
	kind     hashKind
	terminal bool
	header   headerMatcher // kind hashHeader: where the value is read
	re       *regexp.Regexp
	template string // re's substitution, in Go's Expand syntax
}

// Hasher computes a request's hash from one route's hash policies. It is
// immutable and safe for concurrent use.
type Hasher struct {
	policies []compiledHash
}

// Hasher returns the compiled hash policies of the route of index i (see
// [Table.Find]), or nil when the route has none.
func (t *Table) Hasher(i int) *Hasher {
	if i < 0 || i >= len(t.hashers) {
		return nil
	}
	return t.hashers[i]
}

// Hash returns req's hash by the route's policies (gRFC A42), and false
// when no policy gives one. The policies are evaluated in order; a policy
// that gives a hash h changes the hash so far from x to
// bits.RotateLeft64(x, 1) ^ h (x is 0 before the first; the combination
// of Envoy and grpc-go), and a terminal policy that gives a hash ends the
// evaluation. channelID is what a [ChannelIDKey] policy gives.
//
// Hash allocates nothing, unless a header policy rewrites the value with
// a regex (Go's regexp allocates).
func (h *Hasher) Hash(req *Request, channelID uint64) (uint64, bool) {
	var hash uint64
	found := false
	for i := range h.policies {
		p := &h.policies[i]
		var ph uint64
		switch p.kind {
		case hashHeader:
			var ok bool
			if ph, ok = p.hashHeader(req); !ok {
				continue
			}
		case hashChannelID:
			ph = channelID
		default:
			continue
		}
		hash = bits.RotateLeft64(hash, 1) ^ ph
		found = true
		if p.terminal {
			break
		}
	}
	return hash, found
}

// hashHeader hashes the policy's header of req, reporting false when the
// request does not have it.
func (p *compiledHash) hashHeader(req *Request) (uint64, bool) {
	hm := &p.header
	switch hm.source {
	case fromHeaders:
	case fromNothing:
		return 0, false
	default:
		v, ok := hm.lookup(req, nil)
		if !ok {
			return 0, false
		}
		return p.hashValue(v), true
	}
	if req.Headers == nil {
		return 0, false
	}
	vs, v, ok := headerValues(req.Headers, hm.key)
	switch {
	case !ok:
		return 0, false
	case vs == nil || len(vs) == 1 && p.re == nil:
		if vs != nil {
			v = vs[0]
		}
		return p.hashValue(v), true
	case p.re != nil:
		return p.hashValue(strings.Join(vs, ",")), true
	}
	// Several values: XXH64 of their join, without building it.
	var d xxhash.Digest
	d.Reset()
	for i, s := range vs {
		if i > 0 {
			_, _ = d.WriteString(",")
		}
		_, _ = d.WriteString(s)
	}
	return d.Sum64(), true
}

// hashValue rewrites v if the policy says so, and hashes it.
func (p *compiledHash) hashValue(v string) uint64 {
	if p.re != nil {
		v = p.re.ReplaceAllString(v, p.template)
	}
	return xxhash.Sum64String(v)
}

// headerValues reads the header of canonical name key from md: its
// values, when md lists them (an http.Header, read by the key itself, or a
// [valuer]), else its one value from Get; ok is false when it is absent.
func headerValues(md lb.Metadata, key string) (vs []string, v string, ok bool) {
	switch md := md.(type) {
	case http.Header:
		vs = md[key]
	case valuer:
		vs = md.Values(key)
	default:
		v = md.Get(key)
		return nil, v, v != ""
	}
	return vs, "", len(vs) > 0
}

// compileHashPolicies compiles an action's hash policies; nil when it has
// none. Errors are relative to the action ("hashPolicy[0].header...").
func compileHashPolicies(ps []HashPolicy) (*Hasher, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	h := &Hasher{policies: make([]compiledHash, len(ps))}
	for i := range ps {
		if err := compileHash(&h.policies[i], &ps[i]); err != nil {
			return nil, lb.PrefixConfigError("hashPolicy["+strconv.Itoa(i)+"]", err)
		}
	}
	return h, nil
}

func compileHash(c *compiledHash, p *HashPolicy) error {
	n := 0
	for _, set := range []bool{p.Header != nil, p.FilterState != nil, p.Cookie != nil, p.ConnectionProperties != nil, p.QueryParameter != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return lb.ConfigErrorf("", "want one hash policy specifier (header, filterState, cookie, connectionProperties or queryParameter), got %d", n)
	}
	c.terminal = p.Terminal
	switch {
	case p.FilterState != nil:
		if p.FilterState.Key == ChannelIDKey {
			c.kind = hashChannelID
		}
	case p.Header != nil:
		return lb.PrefixConfigError("header", compileHeaderHash(c, p.Header))
	}
	return nil
}

func compileHeaderHash(c *compiledHash, h *HeaderHash) error {
	if h.HeaderName == "" {
		return lb.ConfigErrorf("headerName", "empty header name")
	}
	c.kind = hashHeader
	c.header = headerMatcher{key: textproto.CanonicalMIMEHeaderKey(h.HeaderName), lower: strings.ToLower(h.HeaderName)}
	c.header.source = headerSourceOf(c.header.lower)
	rr := h.RegexRewrite
	if rr == nil {
		return nil
	}
	if rr.Pattern == nil {
		return lb.ConfigErrorf("regexRewrite.pattern", "required")
	}
	re, err := regexp.Compile(rr.Pattern.Regex)
	if err != nil {
		return lb.ConfigErrorf("regexRewrite.pattern.regex", "invalid RE2 regex %q: %v", rr.Pattern.Regex, err)
	}
	tmpl, err := expandTemplate(rr.Substitution, re.NumSubexp())
	if err != nil {
		return lb.ConfigErrorf("regexRewrite.substitution", "%v", err)
	}
	c.re, c.template = re, tmpl
	return nil
}

// expandTemplate turns an RE2 substitution (\0 to \9 for the match and
// its groups, \\ for a backslash) into Go's regexp Expand template, in
// which "$" is escaped. A backslash before anything else, or a group
// beyond the regex's groups, is an error, as RE2 refuses it.
func expandTemplate(sub string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(sub); i++ {
		c := sub[i]
		switch c {
		case '$':
			b.WriteString("$$")
			continue
		case '\\':
		default:
			b.WriteByte(c)
			continue
		}
		if i+1 == len(sub) {
			return "", fmt.Errorf("a substitution may not end with a lone backslash")
		}
		i++
		switch d := sub[i]; {
		case d == '\\':
			b.WriteByte('\\')
		case d >= '0' && d <= '9':
			if int(d-'0') > groups {
				return "", fmt.Errorf("\\%c names group %c, but the pattern has %d", d, d, groups)
			}
			b.WriteString("${" + string(d) + "}")
		default:
			return "", fmt.Errorf("invalid escape \\%c (want \\0 to \\9 or \\\\)", d)
		}
	}
	return b.String(), nil
}
