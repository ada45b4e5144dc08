package resolver

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// TargetValidator is an optional interface of a [Builder]. ValidateTarget
// reports whether target is well formed for the builder's scheme, without
// resolving anything and without starting goroutines; the error names what
// is wrong. [ParseTarget] calls it, so a malformed target fails when it is
// parsed rather than when the channel builds its resolver. Build should make
// the same checks, because a Target can also be built by hand.
//
// ValidateTarget may be called from any goroutine at any time.
type TargetValidator interface {
	ValidateTarget(target Target) error
}

// PathTargets is implemented by builders whose targets name a file-system
// path: in the "scheme://authority/path" form the endpoint keeps the
// path's leading '/', so "scheme:///run/app.sock" is "/run/app.sock". The
// unix, unix-abstract and eds builders implement it; so can yours.
type PathTargets interface {
	// TargetIsPath reports whether the endpoint is a path; true for
	// such builders.
	TargetIsPath() bool
}

// ParseTarget parses a dial target as gRPC's naming document describes
// (https://github.com/grpc/grpc/blob/master/doc/naming.md).
//
// # Forms
//
//   - "scheme://authority/endpoint": the authority runs up to the first '/'
//     after "//"; the endpoint is everything after that '/'. With no '/' after
//     the authority the endpoint is empty.
//   - "scheme:endpoint": no authority; the endpoint is everything after the
//     colon, so "dns:example.com:443" has the endpoint "example.com:443".
//   - "unix:path" and "unix://absolute_path" (also "unix-abstract:",
//     "eds:" and every scheme whose builder implements [PathTargets]): for
//     these file-path schemes the endpoint of the "//" form keeps its
//     leading '/',
//     so "unix:///run/app.sock" is the absolute path "/run/app.sock" and
//     "unix:app.sock" the relative path "app.sock".
//   - anything else: see the scheme rule below.
//
// Schemes are case-insensitive and returned in lower case. The authority
// and the endpoint are percent-decoded (RFC 3986 section 2.1): write a
// literal '%' as "%25"; a '%' not followed by two hex digits is an error.
// Unlike a URL, '?' and '#' are ordinary characters of the endpoint. ASCII
// control characters must be percent-encoded.
//
// # Scheme rule
//
// ParseTarget consults the process-wide registry ([Get]), as grpc-go does:
// when target begins with a syntactically valid scheme ("letter *(letter /
// digit / '+' / '-' / '.')" followed by ':') AND a [Builder] is registered
// for it, the target is parsed under that scheme, and any error is
// returned. Otherwise the whole target, percent-decoded, is the endpoint of
// defaultScheme with an empty authority. So with "dns" as the default,
// "localhost:8080" (no resolver for "localhost") is
// Target{Scheme: "dns", Endpoint: "localhost:8080"}, and so are
// "[::1]:443" and "10.0.0.1:80" (no scheme at all). A channel therefore
// needs no retry of its own: it calls ParseTarget once and then [Get] on
// the returned Scheme. The default scheme does not have to be registered;
// the channel then fails on Get.
//
// # Validation
//
// When the scheme of the result has a registered builder that implements
// [TargetValidator], ParseTarget returns its verdict, for example for a dns
// target with an invalid port or a unix target with an empty path. Every
// error begins with `resolver: target "<target>": `.
//
// # Round trip
//
// [Target.String] does not escape '%' and writes every scheme in the "//"
// form, so it re-parses to the same Target only when the scheme is neither
// unix nor unix-abstract, the endpoint holds no '%' or control character,
// and the authority holds none of those and no '/'.
func ParseTarget(target, defaultScheme string) (Target, error) {
	return ParseTargetWith(target, defaultScheme)
}

// ParseTargetWith is [ParseTarget] with extra builders that count as
// registered, ahead of the process-wide registry: a channel given its own
// resolver builder parses its targets with it.
func ParseTargetWith(target, defaultScheme string, extra ...Builder) (Target, error) {
	lookup := func(scheme string) Builder {
		for _, b := range extra {
			if b != nil && strings.EqualFold(b.Scheme(), scheme) {
				return b
			}
		}
		return Get(scheme)
	}
	t, err := parseTarget(target, defaultScheme, lookup)
	if err != nil {
		return Target{}, fmt.Errorf("resolver: target %q: %w", target, err)
	}
	return t, nil
}

func parseTarget(target, defaultScheme string, lookup func(string) Builder) (Target, error) {
	if target == "" {
		return Target{}, errors.New("empty target")
	}
	if i := strings.IndexFunc(target, isControl); i >= 0 {
		return Target{}, fmt.Errorf("control character %q at byte %d; percent-encode it", target[i], i)
	}
	scheme, rest, hasScheme := splitScheme(target)
	if hasScheme {
		scheme = strings.ToLower(scheme)
		if b := lookup(scheme); b != nil {
			t, err := parseWithScheme(scheme, rest, isPathScheme(scheme, b))
			if err != nil {
				return Target{}, err
			}
			return t, validate(b, t)
		}
	}
	// Not a registered scheme: the whole target is an endpoint of the
	// default scheme.
	if defaultScheme == "" {
		if hasScheme {
			return Target{}, fmt.Errorf("no resolver is registered for scheme %q and no default scheme was given", scheme)
		}
		return Target{}, errors.New("no scheme and no default scheme was given")
	}
	if !validScheme(defaultScheme) {
		return Target{}, fmt.Errorf("invalid default scheme %q", defaultScheme)
	}
	defaultScheme = strings.ToLower(defaultScheme)
	endpoint, err := unescape("endpoint", target)
	if err == nil {
		t := Target{Scheme: defaultScheme, Endpoint: endpoint}
		if err = validate(lookup(defaultScheme), t); err == nil {
			return t, nil
		}
	}
	if hasScheme {
		return Target{}, fmt.Errorf("no resolver is registered for scheme %q, so the whole target was parsed as a %q endpoint: %w", scheme, defaultScheme, err)
	}
	return Target{}, err
}

// validate asks b to check t when b can.
func validate(b Builder, t Target) error {
	if v, ok := b.(TargetValidator); ok {
		return v.ValidateTarget(t)
	}
	return nil
}

// parseWithScheme parses what follows "scheme:".
func parseWithScheme(scheme, rest string, path bool) (Target, error) {
	t := Target{Scheme: scheme}
	rawEndpoint := rest
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		auth, ep, found := strings.Cut(after, "/")
		a, err := unescape("authority", auth)
		if err != nil {
			return Target{}, err
		}
		t.Authority = a
		rawEndpoint = ep
		if found && path {
			rawEndpoint = "/" + ep
		}
	}
	ep, err := unescape("endpoint", rawEndpoint)
	if err != nil {
		return Target{}, err
	}
	t.Endpoint = ep
	return t, nil
}

// isPathScheme reports whether scheme's "//" form carries an absolute
// path: the naming document's unix schemes, and every scheme whose builder
// says so ([PathTargets]).
func isPathScheme(scheme string, b Builder) bool {
	if p, ok := b.(PathTargets); ok {
		return p.TargetIsPath()
	}
	return scheme == "unix" || scheme == "unix-abstract"
}

// splitScheme splits "scheme:rest". ok is false when target does not begin
// with a syntactically valid scheme and a colon.
func splitScheme(target string) (scheme, rest string, ok bool) {
	scheme, rest, found := strings.Cut(target, ":")
	if !found || !validScheme(scheme) {
		return "", "", false
	}
	return scheme, rest, true
}

// validScheme reports whether s matches RFC 3986's
// ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

func unescape(part, s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	u, err := url.PathUnescape(s)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", part, s, err)
	}
	return u, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
