package resolver_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb/resolver"
	_ "github.com/lbkit/lbkit/lb/resolver/dns"
	_ "github.com/lbkit/lbkit/lb/resolver/passthrough"
	_ "github.com/lbkit/lbkit/lb/resolver/static"
	_ "github.com/lbkit/lbkit/lb/resolver/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseTarget(t *testing.T) {
	type T = resolver.Target
	tests := []struct {
		target, defaultScheme string
		want                  T
	}{
		// dns, every form.
		{"dns:///example.com:443", "dns", T{Scheme: "dns", Endpoint: "example.com:443"}},
		{"dns:example.com", "dns", T{Scheme: "dns", Endpoint: "example.com"}},
		{"dns://8.8.8.8/example.com", "dns", T{Scheme: "dns", Authority: "8.8.8.8", Endpoint: "example.com"}},
		{"dns://[::1]:53/example.com:80", "dns", T{Scheme: "dns", Authority: "[::1]:53", Endpoint: "example.com:80"}},
		{"DNS:///Example.com", "dns", T{Scheme: "dns", Endpoint: "Example.com"}},
		{"dns:///[::1]:8080", "dns", T{Scheme: "dns", Endpoint: "[::1]:8080"}},
		{"dns:::1", "dns", T{Scheme: "dns", Endpoint: "::1"}},
		// No registered scheme: the whole target is a default-scheme endpoint.
		{"example.com", "dns", T{Scheme: "dns", Endpoint: "example.com"}},
		{"localhost:8080", "dns", T{Scheme: "dns", Endpoint: "localhost:8080"}},
		{"[::1]:443", "dns", T{Scheme: "dns", Endpoint: "[::1]:443"}},
		{"10.0.0.1:80", "dns", T{Scheme: "dns", Endpoint: "10.0.0.1:80"}},
		{"::1", "dns", T{Scheme: "dns", Endpoint: "::1"}},
		{":8080", "dns", T{Scheme: "dns", Endpoint: ":8080"}},
		{"foo://bar/baz", "passthrough", T{Scheme: "passthrough", Endpoint: "foo://bar/baz"}},
		{"x", "NoSuchScheme", T{Scheme: "nosuchscheme", Endpoint: "x"}},
		{"my%20host", "passthrough", T{Scheme: "passthrough", Endpoint: "my host"}},
		// passthrough.
		{"passthrough:///10.0.0.1:80", "dns", T{Scheme: "passthrough", Endpoint: "10.0.0.1:80"}},
		{"passthrough://auth/x:1", "dns", T{Scheme: "passthrough", Authority: "auth", Endpoint: "x:1"}},
		{"passthrough:///[fe80::1%25eth0]:443", "dns", T{Scheme: "passthrough", Endpoint: "[fe80::1%eth0]:443"}},
		{"passthrough:///a?b#c", "dns", T{Scheme: "passthrough", Endpoint: "a?b#c"}},
		{"passthrough:///a/b/c", "dns", T{Scheme: "passthrough", Endpoint: "a/b/c"}},
		// unix: relative and absolute paths.
		{"unix:rel/app.sock", "dns", T{Scheme: "unix", Endpoint: "rel/app.sock"}},
		{"unix:/abs/app.sock", "dns", T{Scheme: "unix", Endpoint: "/abs/app.sock"}},
		{"unix:///abs/app.sock", "dns", T{Scheme: "unix", Endpoint: "/abs/app.sock"}},
		{"unix:///tmp/my%20app.sock", "dns", T{Scheme: "unix", Endpoint: "/tmp/my app.sock"}},
		{"unix-abstract:name", "dns", T{Scheme: "unix-abstract", Endpoint: "name"}},
		{"unix-abstract:///name", "dns", T{Scheme: "unix-abstract", Endpoint: "/name"}},
		{"app.sock", "unix", T{Scheme: "unix", Endpoint: "app.sock"}},
		{"/run/app.sock", "unix", T{Scheme: "unix", Endpoint: "/run/app.sock"}},
		// static.
		{"static:///a:1,b:2,a:1", "dns", T{Scheme: "static", Endpoint: "a:1,b:2,a:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			got, err := resolver.ParseTarget(tc.target, tc.defaultScheme)
			if err != nil {
				t.Fatalf("ParseTarget(%q, %q): %v", tc.target, tc.defaultScheme, err)
			}
			if got != tc.want {
				t.Errorf("ParseTarget(%q, %q) = %#v, want %#v", tc.target, tc.defaultScheme, got, tc.want)
			}
		})
	}
}

func TestParseTargetErrors(t *testing.T) {
	tests := []struct {
		target, defaultScheme string
		want                  string // a substring of the error after the prefix
	}{
		{"", "dns", "empty target"},
		{"a\nb", "dns", `control character '\n' at byte 1`},
		{"example.com", "", "no scheme and no default scheme"},
		{"foo:bar", "", `no resolver is registered for scheme "foo" and no default scheme`},
		{"x", "1bad", `invalid default scheme "1bad"`},
		{"passthrough:///%zz", "dns", `endpoint "%zz": invalid URL escape "%zz"`},
		{"dns://%g1/x", "dns", `authority "%g1": invalid URL escape`},
		{"a%", "dns", `invalid URL escape "%"`},
		// dns.
		{"dns:", "dns", `dns: endpoint "": empty`},
		{"dns://8.8.8.8", "dns", `dns: endpoint "": empty`},
		{"dns:///a.test:bad", "dns", `invalid port "bad"`},
		{"dns:///a.test:0", "dns", `invalid port "0"`},
		{"dns:///a.test:65536", "dns", `invalid port "65536"`},
		{"dns:///a.test:-1", "dns", `invalid port "-1"`},
		{"dns:///a.test:", "dns", "missing port after ':'"},
		{"dns:///a:b:c", "dns", "too many colons"},
		{"dns:///[::1", "dns", "missing ']'"},
		{"dns:///a%20b", "dns", `host "a b" contains white space`},
		{"dns://1.2.3.4:99999/a.test", "dns", `dns: authority (DNS server) "1.2.3.4:99999": invalid port "99999"`},
		{"localhost:http", "dns", `no resolver is registered for scheme "localhost", so the whole target was parsed as a "dns" endpoint: dns: endpoint "localhost:http": invalid port "http"`},
		// passthrough.
		{"passthrough:", "dns", "passthrough: empty endpoint"},
		{"passthrough:///", "dns", "passthrough: empty endpoint"},
		// unix.
		{"unix:", "dns", "unix: empty socket path"},
		{"unix://", "dns", "unix: empty socket path"},
		{"unix://host/path", "dns", `unix: authority "host" is not supported`},
		{"unix-abstract:", "dns", "unix-abstract: empty socket path"},
		{"", "unix", "empty target"},
		// static.
		{"static:", "dns", "static: empty address list"},
		{"static:///a:1,b", "dns", `static: element 1 "b": missing port`},
		{"static:///a:1,,b:2", "dns", `static: element 1 "": empty address`},
		{"static:///a:1,b:70000", "dns", `static: element 1 "b:70000": invalid port "70000"`},
		{"static:///:1", "dns", `static: element 0 ":1": empty host`},
		{"static://a:1,b:2/", "dns", `static: authority "a:1,b:2" is not supported`},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			got, err := resolver.ParseTarget(tc.target, tc.defaultScheme)
			if err == nil {
				t.Fatalf("ParseTarget(%q, %q) = %#v, want an error containing %q", tc.target, tc.defaultScheme, got, tc.want)
			}
			prefix := "resolver: target " + strconv.Quote(tc.target) + ": "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg[len(prefix):], tc.want) {
				t.Errorf("ParseTarget(%q, %q) error = %q, want prefix %q and %q", tc.target, tc.defaultScheme, msg, prefix, tc.want)
			}
		})
	}
}

// fuzzDefaults are the default schemes FuzzParseTarget tries; all are
// registered, so canonical forms re-parse under them.
var fuzzDefaults = []string{"dns", "unix", "passthrough"}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"dns:///example.com:443", "dns://8.8.8.8:53/a.test", "localhost:8080", "[::1]:443",
		"unix:rel", "unix:///abs", "unix-abstract:name", "passthrough:///a%25b",
		"static:///a:1,b:2", "foo://bar/baz", "%zz", "unix:%2F%2Fx",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		for _, def := range fuzzDefaults {
			got, err := resolver.ParseTarget(target, def)
			if err != nil {
				if prefix := "resolver: target " + strconv.Quote(target) + ": "; !strings.HasPrefix(err.Error(), prefix) {
					t.Fatalf("ParseTarget(%q, %q) error %q lacks prefix %q", target, def, err, prefix)
				}
				continue
			}
			if got.Scheme != strings.ToLower(got.Scheme) {
				t.Fatalf("ParseTarget(%q, %q) = %#v: scheme not in lower case", target, def, got)
			}
			c := canonical(got)
			if again, err := resolver.ParseTarget(c, def); err != nil || again != got {
				t.Fatalf("ParseTarget(%q, %q) = %#v; its canonical form %q re-parses to %#v, %v", target, def, got, c, again, err)
			}
			if stringRoundTrips(got) {
				s := got.String()
				if again, err := resolver.ParseTarget(s, def); err != nil || again != got {
					t.Fatalf("ParseTarget(%q, %q) = %#v; its String() %q re-parses to %#v, %v", target, def, got, s, again, err)
				}
			}
		}
	})
}

// stringRoundTrips reports whether t is in the class for which
// ParseTarget(t.String()) is documented to give back t.
func stringRoundTrips(t resolver.Target) bool {
	if t.Scheme == "unix" || t.Scheme == "unix-abstract" {
		return false
	}
	return !strings.ContainsAny(t.Authority, "%/") && !strings.Contains(t.Endpoint, "%") &&
		!hasControl(t.Authority) && !hasControl(t.Endpoint)
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// canonical formats t so that ParseTarget gives t back: it escapes what the
// parser decodes, and writes unix paths in the naming document's forms.
// Target.String could adopt it.
func canonical(t resolver.Target) string {
	if t.Scheme == "unix" || t.Scheme == "unix-abstract" {
		if t.Authority == "" && strings.HasPrefix(t.Endpoint, "/") {
			return t.Scheme + "://" + escape(t.Endpoint, "")
		}
		if t.Authority == "" {
			return t.Scheme + ":" + escape(t.Endpoint, "")
		}
	}
	return t.Scheme + "://" + escape(t.Authority, "/") + "/" + escape(t.Endpoint, "")
}

// escape percent-encodes '%', control characters and the bytes in extra.
func escape(s, extra string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c < 0x20 || c == 0x7f || strings.IndexByte(extra, c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func ExampleParseTarget() {
	for _, s := range []string{
		"dns://8.8.8.8/example.com:443",
		"localhost:8080", // no resolver for "localhost": a dns endpoint
		"unix:///run/app.sock",
		"dns:///example.com:http",
	} {
		t, err := resolver.ParseTarget(s, "dns")
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("scheme=%s authority=%q endpoint=%q\n", t.Scheme, t.Authority, t.Endpoint)
	}
	// Output:
	// scheme=dns authority="8.8.8.8" endpoint="example.com:443"
	// scheme=dns authority="" endpoint="localhost:8080"
	// scheme=unix authority="" endpoint="/run/app.sock"
	// resolver: target "dns:///example.com:http": dns: endpoint "example.com:http": invalid port "http": want a number from 1 to 65535
}

// pathBuilder is a builder whose targets are paths.
type pathBuilder struct{}

func (pathBuilder) Scheme() string { return "mypath" }
func (pathBuilder) Build(resolver.Target, resolver.ClientConn, resolver.BuildOptions) (resolver.Resolver, error) {
	return nil, nil
}
func (pathBuilder) TargetIsPath() bool { return true }

// A builder that implements PathTargets keeps the leading '/' of its
// targets' endpoints, as unix: does.
func TestPathTargetsKeepTheLeadingSlash(t *testing.T) {
	got, err := resolver.ParseTargetWith("mypath:///etc/lb/cla.json", "dns", pathBuilder{})
	if err != nil || got.Endpoint != "/etc/lb/cla.json" {
		t.Fatalf("ParseTargetWith = %+v, %v; want the endpoint /etc/lb/cla.json", got, err)
	}
}
