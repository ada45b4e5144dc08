package route

import (
	"errors"
	"strconv"
	"strings"

	"github.com/lbkit/lbkit/lb"
)

// Request is what a route matches: the request's authority (HTTP Host),
// method, path and headers.
type Request struct {
	// Authority is the request's authority (the HTTP Host header,
	// gRPC's :authority), with or without a port.
	Authority string
	// Method is the HTTP method ("GET"); empty when the transport has
	// none.
	Method string
	// Path is the request's path, without the query.
	Path string
	// Headers are the request's headers; nil is none. Keys are looked up
	// in canonical MIME form ("X-User"), as http.Header stores them; a
	// Headers that also has Values(key string) []string (http.Header has)
	// is matched on all of a header's values joined with ",".
	Headers lb.Metadata
}

// Source is a source of random numbers for runtime fractions. *rand.Rand
// of math/rand/v2 is one (but is not safe for concurrent use).
type Source interface {
	// Uint64 returns a uniformly distributed random number.
	Uint64() uint64
}

// The errors of [Table.Find].
var (
	// ErrNoVirtualHost means no virtual host's domain matches the
	// request's authority.
	ErrNoVirtualHost = errors.New("route: no virtual host matches the authority")
	// ErrNoRoute means the virtual host has no route that matches the
	// request.
	ErrNoRoute = errors.New("route: no route matches the request")
)

// Find returns the index of the route that takes req (see [Table.Route]),
// or [ErrNoVirtualHost] or [ErrNoRoute]. rnd draws the runtime fractions'
// numbers; it may be nil when no route has one, and is then read as 0
// (every fraction above 0 matches).
//
// The virtual host is the one whose domain matches req.Authority best: an
// exact domain first, then the longest suffix wildcard ("*.example.com"),
// the longest prefix wildcard ("svc.*"), and "*"; configuration order
// breaks ties. A wildcard matches at least one character. Domains are
// compared without case, with the authority as given: "svc:8080" is
// matched by a domain "svc:8080" or "svc*", not by "svc" (as in Envoy,
// whose configurations list both forms). Within the virtual host the
// first route whose path specifier, headers and runtime fraction all
// match wins (gRFC A28).
//
// Find is safe for concurrent use (if rnd is) and allocates nothing,
// unless a matched header has several values.
func (t *Table) Find(req *Request, rnd Source) (int, error) {
	h := t.findHost(req.Authority)
	if h < 0 {
		return -1, ErrNoVirtualHost
	}
	x := t.hosts[h]
	if i := x.find(req, rnd); i >= 0 {
		return x.routes[i].index, nil
	}
	return -1, ErrNoRoute
}

// findHost returns the index of the virtual host for host, or -1.
func (t *Table) findHost(host string) int {
	if h, ok := t.exactHosts[host]; ok && t.exactHosts != nil {
		return h // a lower-case host: the map has every exact domain in lower case
	}
	for i := range t.domains {
		d := &t.domains[i]
		p := d.pattern
		switch d.kind {
		case domainExact:
			if !isLower(host) && strings.EqualFold(host, p) {
				return d.host
			}
		case domainSuffix:
			if len(host) > len(p) && strings.EqualFold(host[len(host)-len(p):], p) {
				return d.host
			}
		case domainPrefix:
			if len(host) > len(p) && strings.EqualFold(host[:len(p)], p) {
				return d.host
			}
		case domainAny:
			return d.host
		}
	}
	return -1
}

// isLower reports whether s has no upper-case ASCII letter and no
// non-ASCII byte: whether it is its own lower case, so that the exact
// domains' map answers for it.
func isLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return false
		}
	}
	return true
}

// match reports whether the route takes req.
func (r *compiledRoute) match(req *Request, rnd Source, hc *headerCache) bool {
	return !r.never && r.matchPath(req.Path) && r.matchRest(req, rnd, hc)
}

// matchRest reports whether req, whose path matches, matches the route's
// headers and runtime fraction.
func (r *compiledRoute) matchRest(req *Request, rnd Source, hc *headerCache) bool {
	if r.never {
		return false
	}
	for i := range r.headers {
		if !r.headers[i].match(req, hc) {
			return false
		}
	}
	if r.hasFrac {
		var n uint64
		if rnd != nil {
			n = rnd.Uint64()
		}
		return n%1_000_000 < uint64(r.fraction)
	}
	return true
}

func (r *compiledRoute) matchPath(path string) bool {
	switch r.kind {
	case pathPrefix:
		if r.fold {
			return len(path) >= len(r.pattern) && strings.EqualFold(path[:len(r.pattern)], r.pattern)
		}
		return strings.HasPrefix(path, r.pattern)
	case pathExact:
		if r.fold {
			return strings.EqualFold(path, r.pattern)
		}
		return path == r.pattern
	}
	return r.re.MatchString(path)
}

// valuer is the optional side of lb.Metadata that http.Header has.
type valuer interface {
	Values(key string) []string
}

// headerCache remembers the headers one Find has looked up, by the slot
// the table gave each header name, so that many routes matching the same
// header look it up once. It lives on Find's stack.
type headerCache struct {
	seen uint8 // bit i: slot i is looked up
	vals [cacheSlots]string
	oks  uint8 // bit i: slot i's header is present
}

// cacheSlots is how many header names a request's cache holds; the
// table's other names are looked up each time.
const cacheSlots = 8

// lookup returns the header's value for req and whether it is present.
func (h *headerMatcher) lookup(req *Request, hc *headerCache) (string, bool) {
	switch h.source {
	case fromMethod:
		return req.Method, req.Method != ""
	case fromAuthority:
		return req.Authority, req.Authority != ""
	case fromPath:
		return req.Path, req.Path != ""
	case fromNothing:
		return "", false
	}
	if req.Headers == nil {
		return "", false
	}
	if h.slot >= cacheSlots {
		return h.fetch(req.Headers)
	}
	bit := uint8(1) << h.slot
	if hc.seen&bit != 0 {
		return hc.vals[h.slot], hc.oks&bit != 0
	}
	v, ok := h.fetch(req.Headers)
	hc.seen |= bit
	hc.vals[h.slot] = v
	if ok {
		hc.oks |= bit
	}
	return v, ok
}

// fetch reads the header from md: all its values joined with "," when md
// has them (http.Header, read directly with the canonical key).
func (h *headerMatcher) fetch(md lb.Metadata) (string, bool) {
	vs, v, ok := headerValues(md, h.key)
	if len(vs) <= 1 {
		if len(vs) == 1 {
			v = vs[0]
		}
		return v, ok
	}
	return strings.Join(vs, ","), true
}

func (h *headerMatcher) match(req *Request, hc *headerCache) bool {
	v, ok := h.lookup(req, hc)
	if h.kind == headerPresent {
		return (ok == h.present) != h.invert
	}
	if !ok {
		return false
	}
	return h.matchValue(v) != h.invert
}

func (h *headerMatcher) matchValue(v string) bool {
	p := h.value
	switch h.kind {
	case headerExact:
		if h.fold {
			return strings.EqualFold(v, p)
		}
		return v == p
	case headerRegex:
		return h.re.MatchString(v)
	case headerRange:
		n, err := strconv.ParseInt(v, 10, 64)
		return err == nil && n >= h.start && n < h.end
	case headerPrefix:
		if h.fold {
			return len(v) >= len(p) && strings.EqualFold(v[:len(p)], p)
		}
		return strings.HasPrefix(v, p)
	case headerSuffix:
		if h.fold {
			return len(v) >= len(p) && strings.EqualFold(v[len(v)-len(p):], p)
		}
		return strings.HasSuffix(v, p)
	case headerContains:
		if h.fold {
			return containsFold(v, p)
		}
		return strings.Contains(v, p)
	}
	return false
}

// containsFold reports whether sub is within s, without case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
