package nethttp

import (
	"net/http"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// HashHeader returns a [Transport.RequestHash] that hashes the request's
// header name (every value, joined with ",") with XXH64, the hash gRFC A42
// names, so equal values go to the same backend. A request without the
// header has no hash. An empty name is a mistake in the program: HashHeader
// panics naming it, as lbkit's constructors without an error result do.
func HashHeader(name string) func(*http.Request) (uint64, bool) {
	if name == "" {
		panic("nethttp: HashHeader: empty header name")
	}
	name = http.CanonicalHeaderKey(name)
	return func(req *http.Request) (uint64, bool) {
		vs := req.Header[name]
		if len(vs) == 0 {
			return 0, false
		}
		return xxhash.Sum64String(strings.Join(vs, ",")), true
	}
}

// HashCookie returns a [Transport.RequestHash] that hashes the value of the
// request's cookie name with XXH64 (session affinity). A request without
// the cookie has no hash. An empty name panics, as in [HashHeader].
func HashCookie(name string) func(*http.Request) (uint64, bool) {
	if name == "" {
		panic("nethttp: HashCookie: empty cookie name")
	}
	return func(req *http.Request) (uint64, bool) {
		c, err := req.Cookie(name)
		if err != nil {
			return 0, false
		}
		return xxhash.Sum64String(c.Value), true
	}
}

// HashPath returns a [Transport.RequestHash] that hashes the request's URL
// path with XXH64 (a cache keyed by path). Every request has one.
func HashPath() func(*http.Request) (uint64, bool) {
	return func(req *http.Request) (uint64, bool) {
		return xxhash.Sum64String(req.URL.Path), true
	}
}
