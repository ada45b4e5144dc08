package static_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/static"
	"github.com/lbkit/lbkit/lb/weight"
)

// ParseAddresses never panics; an error names the package; an accepted list
// is canonical: joined again, it parses to the same addresses.
func FuzzParseAddresses(f *testing.F) {
	for _, s := range []string{"10.0.0.1:80", "a:1,b:2", "a:1=3,b:2", "a:1=0", "a:1=x=2", "[::1]:443", "a:0", "a:65536", "a", ",", "a:1,", " a:1", "[fe80::1%eth0]:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, endpoint string) {
		addrs, err := static.ParseAddresses(resolver.Target{Scheme: "static", Endpoint: endpoint})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "static: ") {
				t.Fatalf("ParseAddresses(%q) error %q lacks the package prefix", endpoint, err)
			}
			return
		}
		if len(addrs) == 0 {
			t.Fatalf("ParseAddresses(%q) accepted an empty list", endpoint)
		}
		parts := make([]string, len(addrs))
		for i, a := range addrs {
			parts[i] = a.Addr
			if w, ok := weight.Get(a); ok {
				parts[i] += "=" + strconv.FormatUint(uint64(w), 10)
			}
		}
		again, err := static.ParseAddresses(resolver.Target{Scheme: "static", Endpoint: strings.Join(parts, ",")})
		if err != nil || len(again) != len(addrs) {
			t.Fatalf("canonical form %q of %q: %v, %v", strings.Join(parts, ","), endpoint, again, err)
		}
		for i := range again {
			if again[i] != addrs[i] {
				t.Fatalf("canonical form of %q re-parses to %v, want %v", endpoint, again, addrs)
			}
		}
	})
}
