package route_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/route"
)

func mustParse(t testing.TB, js string) *route.Table {
	t.Helper()
	tab, _, err := route.Parse([]byte(js))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tab
}

// Bad configs are rejected with the JSON path of the field and the reason
// (gRFC A28's NACK rules).
func TestParseRejects(t *testing.T) {
	vh := func(routes string) string {
		return `{"virtualHosts":[{"domains":["*"],"routes":[` + routes + `]}]}`
	}
	for _, tc := range []struct{ json, path, reason string }{
		{`{"virtualHosts":[{"routes":[]}]}`, "virtualHosts[0].domains", "at least one domain"},
		{`{"virtualHosts":[{"domains":["a*b"]}]}`, "virtualHosts[0].domains[0]", "wildcard"},
		{`{"virtualHosts":[{"domains":[""]}]}`, "virtualHosts[0].domains[0]", "empty domain"},
		{vh(`{"match":{},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match", "got none"},
		{vh(`{"match":{"prefix":"/","path":"/a"},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match", "got 2"},
		{vh(`{"match":{"safeRegex":{"regex":"a(b"}},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.safeRegex.regex", "invalid RE2 regex"},
		{vh(`{"match":{"safeRegex":{"regex":"(a)\\1"}},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.safeRegex.regex", "invalid RE2 regex"},
		{vh(`{"match":{"safeRegex":"/a"},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.safeRegex", "want a JSON object"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x","stringMatch":{"safeRegex":{"regex":"a{2,1}"}}}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0].stringMatch.safeRegex.regex", "invalid RE2"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x","stringMatch":{"prefix":"a","suffix":"b"}}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0].stringMatch", "got 2"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x","stringMatch":{"contains":""}}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0].stringMatch.contains", "must not be empty"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x","stringMatch":{"exact":"a"},"exactMatch":"a"}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0]", "got 2"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x","safeRegexMatch":{"regex":"(?<=a)b"}}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0].safeRegexMatch.regex", "invalid RE2"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x"}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0]", "got 0"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x","exactMatch":"a","presentMatch":true}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0]", "got 2"},
		{vh(`{"match":{"prefix":"/","headers":[{"exactMatch":"a"}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0].name", "empty header name"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x","prefixMatch":""}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0].prefixMatch", "must not be empty"},
		{vh(`{"match":{"prefix":"/","runtimeFraction":{"defaultValue":{"numerator":1,"denominator":"BILLION"}}},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.runtimeFraction.defaultValue.denominator", "BILLION"},
		{vh(`{"match":{"prefix":"/"},"route":{"cluster":"a","maxStreamDuration":{"maxStreamDuration":"x"}}}`), "virtualHosts[0].routes[0].route.maxStreamDuration.maxStreamDuration", "duration"},
		{vh(`{"match":{"prefix":"/"}}`), "virtualHosts[0].routes[0].route", "no action"},
		{vh(`{"match":{"prefix":"/"},"redirect":{"hostRedirect":"x"}}`), "virtualHosts[0].routes[0].route", "no action"},
		{vh(`{"match":{"prefix":"/"},"route":{}}`), "virtualHosts[0].routes[0].route.cluster", "names no cluster"},
		{vh(`{"match":{"prefix":"/"},"route":{"clusterHeader":"x-cluster"}}`), "virtualHosts[0].routes[0].route.clusterHeader", "unsupported"},
		{vh(`{"match":{"prefix":"/"},"route":{"cluster":"a","weightedClusters":{"clusters":[{"name":"b","weight":1}]}}}`), "virtualHosts[0].routes[0].route", "got both"},
		{vh(`{"match":{"prefix":"/"},"route":{"weightedClusters":{"clusters":[]}}}`), "virtualHosts[0].routes[0].route.weightedClusters.clusters", "no cluster"},
		{vh(`{"match":{"prefix":"/"},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":0}]}}}`), "virtualHosts[0].routes[0].route.weightedClusters", "add up to 0"},
		{vh(`{"match":{"prefix":"/"},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":4294967295},{"name":"b","weight":1}]}}}`), "virtualHosts[0].routes[0].route.weightedClusters", "add up to 4294967296"},
		{vh(`{"match":{"prefix":"/"},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":-1}]}}}`), "virtualHosts[0].routes[0].route.weightedClusters.clusters[0].weight", "must be >= 0"},
		{vh(`{"match":{"prefix":"/"},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":1},{"name":"a","weight":1}]}}}`), "virtualHosts[0].routes[0].route.weightedClusters.clusters[1].name", "named twice"},
		{vh(`{"match":{"prefix":"/"},"route":{"weightedClusters":{"clusters":[{"weight":1}]}}}`), "virtualHosts[0].routes[0].route.weightedClusters.clusters[0].name", "empty cluster name"},
		{vh(`{"match":{"prefix":"/"},"route":{"cluster":"a","timeout":"-1s"}}`), "virtualHosts[0].routes[0].route.timeout", "negative"},
		{vh(`{"match":{"prefix":"/"},"route":{"cluster":"a","timeout":"1m"}}`), "virtualHosts[0].routes[0].route.timeout", "duration"},
		{vh(`{"match":{"prefix":3},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.prefix", "want string"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x","rangeMatch":{"start":"a"}}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0].rangeMatch.start", ""},
		{vh(`{"match":{"regex":"/a"},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.regex", "unsafe"},
		{vh(`{"match":{"prefix":"/","headers":[{"name":"x","regexMatch":"a"}]},"route":{"cluster":"a"}}`), "virtualHosts[0].routes[0].match.headers[0].regexMatch", "unsafe"},
		{vh(`{"match":{"prefix":"/"},"route":{"weightedClusters":{"totalWeight":100,"clusters":[{"name":"a","weight":90}]}}}`), "virtualHosts[0].routes[0].route.weightedClusters.totalWeight", "add up to 90, not 100"},
		{`{"virtualHosts":{}}`, "virtualHosts", "want"},
		{`[]`, "", "object"},
	} {
		_, _, err := route.Parse([]byte(tc.json))
		var ce *lb.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a *lb.ConfigError", tc.json, err)
			continue
		}
		if ce.Path != tc.path || !strings.Contains(ce.Err.Error(), tc.reason) {
			t.Errorf("%s:\n got  %q: %v\n want %q: ...%s...", tc.json, ce.Path, ce.Err, tc.path, tc.reason)
		}
	}
}

// Unknown fields are listed, not errors (proto3 JSON's rule).
func TestParseListsUnknownFields(t *testing.T) {
	_, unknown, err := route.Parse([]byte(`{"virtualHosts":[{"domains":["*"],"x":1,"routes":[{"match":{"prefix":"/","grpc":{}},"route":{"cluster":"a","retryPolicy":{}}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"virtualHosts[0].x", "virtualHosts[0].routes[0].match.grpc", "virtualHosts[0].routes[0].route.retryPolicy"}
	if strings.Join(unknown, " ") != strings.Join(want, " ") {
		t.Fatalf("unknown = %q, want %q", unknown, want)
	}
}

// The JSON json.Marshal makes of a Config parses back to the same
// configuration: the model is its own typed form.
func TestMarshalledConfigParsesBack(t *testing.T) {
	js := `{"name":"rc","virtualHosts":[{"name":"v","domains":["a.example","*.b"],"routes":[
		{"name":"r0","match":{"path":"/x","caseSensitive":false,"headers":[{"name":"x-a","rangeMatch":{"start":"-5","end":10},"invertMatch":true}],
		 "runtimeFraction":{"defaultValue":{"numerator":"25","denominator":"TEN_THOUSAND"},"runtimeKey":"k"}},"route":{"cluster":"c","timeout":"1.5s","maxStreamDuration":{"maxStreamDuration":"0.5s"}}},
		{"match":{"safeRegex":{"regex":"/y.*"},"headers":[{"name":"x-b","stringMatch":{"suffix":"Z","ignoreCase":true}}]},"route":{"weightedClusters":{"clusters":[{"name":"a","weight":3},{"name":"b","weight":"1"}]}}}]}]}`
	tab := mustParse(t, js)
	out, err := jsonMarshal(tab.Config())
	if err != nil {
		t.Fatal(err)
	}
	tab2 := mustParse(t, string(out))
	out2, _ := jsonMarshal(tab2.Config())
	if string(out) != string(out2) {
		t.Fatalf("marshal, parse, marshal changed the config:\n%s\n%s", out, out2)
	}
	if a := tab2.Route(0).Action; a.Timeout.String() != "1.5s" || a.Bound().String() != "500ms" {
		t.Fatalf("timeout %v, bound %v after the round trip, want 1.5s and 500ms (maxStreamDuration)", a.Timeout, a.Bound())
	}
	if got := strings.Join(tab2.Clusters(), ","); got != "c,a,b" {
		t.Fatalf("Clusters() = %s, want c,a,b", got)
	}
}

// Find follows A28's order: virtual host by domain kind and length, then
// the first route that matches (a prefix before an exact path wins, as in
// A28's example).
func TestFindExamples(t *testing.T) {
	tab := mustParse(t, `{"virtualHosts":[
		{"name":"any","domains":["*"],"routes":[{"match":{"prefix":""},"route":{"cluster":"any"}}]},
		{"name":"pre","domains":["svc.*"],"routes":[{"match":{"prefix":""},"route":{"cluster":"pre"}}]},
		{"name":"suf","domains":["*.example.com"],"routes":[{"match":{"prefix":""},"route":{"cluster":"suf"}}]},
		{"name":"suf2","domains":["*.b.example.com"],"routes":[{"match":{"prefix":""},"route":{"cluster":"suf2"}}]},
		{"name":"exact","domains":["svc.example.com", "svc.example.com:8080"],"routes":[
			{"match":{"prefix":"/MyService"},"route":{"cluster":"c1"}},
			{"match":{"path":"/MyService/MyMethod"},"route":{"cluster":"c2"}},
			{"match":{"path":"/other","headers":[{"name":":method","exactMatch":"POST"}]},"route":{"cluster":"post"}},
			{"match":{"path":"/other","headers":[{"name":"x-user","presentMatch":true,"invertMatch":true}]},"route":{"cluster":"anon"}},
			{"match":{"prefix":"/other","caseSensitive":false},"route":{"cluster":"fold"}}]}]}`)
	cluster := func(auth, method, path string, h http.Header) string {
		i, err := tab.Find(&route.Request{Authority: auth, Method: method, Path: path, Headers: h}, nil)
		if err != nil {
			return err.Error()
		}
		return tab.Route(i).Action.Cluster
	}
	for _, tc := range []struct {
		auth, method, path string
		h                  http.Header
		want               string
	}{
		{"svc.example.com", "GET", "/MyService/MyMethod", nil, "c1"},
		{"SVC.Example.com:8080", "GET", "/MyService/MyMethod", nil, "c1"},
		{"svc.example.com:9090", "GET", "/MyService/MyMethod", nil, "pre"}, // the port is part of the authority
		{"a.b.example.com", "GET", "/", nil, "suf2"},
		{"b.example.com", "GET", "/", nil, "suf"}, // "*.b.example.com" needs one character more
		{"x.example.com", "GET", "/", nil, "suf"},
		{"svc.other", "GET", "/", nil, "pre"},
		{"svc.", "GET", "/", nil, "any"},
		{"elsewhere", "GET", "/", nil, "any"},
		{"svc.example.com", "POST", "/other", nil, "post"},
		{"svc.example.com", "GET", "/other", nil, "anon"},
		{"svc.example.com", "GET", "/other", http.Header{"X-User": {"u"}}, "fold"},
		{"svc.example.com", "GET", "/OTHER/x", nil, "fold"},
		{"svc.example.com", "GET", "/nothing", nil, route.ErrNoRoute.Error()},
	} {
		if got := cluster(tc.auth, tc.method, tc.path, tc.h); got != tc.want {
			t.Errorf("%s %s %s %v: got %s, want %s", tc.method, tc.auth, tc.path, tc.h, got, tc.want)
		}
	}
	none := mustParse(t, `{"virtualHosts":[{"domains":["a"],"routes":[]}]}`)
	if _, err := none.Find(&route.Request{Authority: "b"}, nil); !errors.Is(err, route.ErrNoVirtualHost) {
		t.Errorf("no domain matches: got %v, want ErrNoVirtualHost", err)
	}
}
