package route_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/route"
)

var fuzzSeeds = []string{
	`{}`,
	`{"virtualHosts":[{"domains":["*"],"routes":[{"match":{"prefix":"/"},"route":{"cluster":"a"}}]}]}`,
	`{"virtualHosts":[{"domains":["a.*","*.b","c"],"routes":[{"match":{"safeRegex":{"regex":"/x(a|b)+"},"headers":[{"name":"x-a","rangeMatch":{"start":1,"end":"9"}}]},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":9},{"name":"b","weight":1}]},"timeout":"0.5s"}}]}]}`,
	`{"virtualHosts":[{"domains":["*"],"routes":[{"match":{"path":"/A","caseSensitive":false,"runtimeFraction":{"defaultValue":{"numerator":50}}},"route":{"cluster":"a"}},{"match":{"prefix":"","headers":[{"name":":method","stringMatch":{"exact":"get","ignoreCase":true},"invertMatch":true}]},"route":{"cluster":"b"}}]}]}`,
	`{"virtualHosts":[{"domains":["*"],"routes":[{"match":{"safeRegex":{"regex":"(a"}},"route":{"cluster":"a"}}]}]}`,
	`{"virtualHosts":[{"domains":["*"],"routes":[{"match":{"prefix":"/"},"route":{"cluster":"a","hashPolicy":[{"header":{"headerName":"x-a","regexRewrite":{"pattern":{"regex":"([0-9]+)"},"substitution":"<\\1>"}}},{"filterState":{"key":"io.grpc.channel_id"},"terminal":true},{"cookie":{"name":"c"}},{"queryParameter":{}},{"connectionProperties":{"sourceIp":true}}]}}]}]}`,
	`{"virtualHosts":[{"domains":["*"],"routes":[{"match":{"prefix":"/"},"route":{"cluster":"a","hashPolicy":[{"header":{"headerName":":path"},"terminal":true},{"header":{"headerName":"x-a-bin"}}]}}]}]}`,
}

// Parse never panics; it rejects with a *lb.ConfigError, and what it
// accepts marshals to JSON that parses to the same configuration.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		tab, _, err := route.Parse(raw)
		if err != nil {
			var ce *lb.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *lb.ConfigError", err)
			}
			return
		}
		out, err := json.Marshal(tab.Config())
		if err != nil {
			t.Fatalf("marshalling an accepted config: %v", err)
		}
		again, _, err := route.Parse(out)
		if err != nil {
			t.Fatalf("the marshalled config %s is rejected: %v", out, err)
		}
		out2, _ := json.Marshal(again.Config())
		if string(out) != string(out2) {
			t.Fatalf("round trip changed the config:\n%s\n%s", out, out2)
		}
	})
}

// Find never panics, returns an index in range or a miss, and agrees with
// the reference matcher, and the route's hash with the reference hash, on
// ASCII input (the reference folds case with
// strings.ToLower, which differs from Unicode folding outside ASCII).
func FuzzFind(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), "a.b", "GET", "/xab", "x-a", "5", uint64(7))
	}
	f.Fuzz(func(t *testing.T, raw []byte, authority, method, path, hname, hvalue string, seed uint64) {
		tab, _, err := route.Parse(raw)
		if err != nil {
			return
		}
		h := http.Header{}
		h.Add(hname, hvalue)
		req := route.Request{Authority: authority, Method: method, Path: path, Headers: h}
		got, err := tab.Find(&req, &seqSource{seed})
		if (got < 0) != (err != nil) || got >= tab.Len() {
			t.Fatalf("Find = %d, %v with %d routes", got, err, tab.Len())
		}
		for _, s := range []string{authority, method, path, hname, hvalue, string(raw)} {
			if !ascii(s) {
				return
			}
		}
		if !validHeaderName(hname) {
			return
		}
		want, _ := refFind(tab.Config(), refRequest{authority: authority, method: method, path: path,
			headers: map[string][]string{http.CanonicalHeaderKey(hname): {hvalue}}}, &seqSource{seed})
		if got != want {
			t.Fatalf("Find = %d, the reference %d", got, want)
		}
		if got < 0 {
			return
		}
		// The route's hash agrees with the reference written from gRFC A42.
		hash, ok := uint64(0), false
		if hr := tab.Hasher(got); hr != nil {
			hash, ok = hr.Hash(&req, seed)
		}
		if wantHash, wantOK := refHash(tab.Route(got).Action.HashPolicies, &req, seed); hash != wantHash || ok != wantOK {
			t.Fatalf("Hash = %#x, %v; the reference %#x, %v", hash, ok, wantHash, wantOK)
		}
	})
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// validHeaderName: a name http.Header canonicalizes (a token); others are
// stored as given, and found only when given the same way.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
