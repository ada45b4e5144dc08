package routing_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/route"
	"github.com/lbkit/lbkit/lb/routing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const twoClusters = `{
	"routeConfig": {"virtualHosts": [{"domains": ["svc"], "routes": [
		{"match": {"prefix": "/a", "headers": [{"name": "x-b", "presentMatch": true}]}, "route": {"cluster": "b"}},
		{"match": {"prefix": "/a"}, "route": {"cluster": "a", "timeout": "2s"}},
		{"match": {"prefix": "/"}, "route": {"weightedClusters": {"clusters": [{"name": "a", "weight": 3}, {"name": "b", "weight": 1}]}}}]}]},
	"clusters": {"a": {"childPolicy": [{"test_leaf": {}}]}, "b": {"childPolicy": [{"test_leaf": {}}]}}}`

func newRouting(t lbtest.TB, cfg string) (*lbtest.Parent, lb.SubConn, lb.SubConn) {
	t.Helper()
	p := lbtest.NewParent(t)
	p.Build(routing.Builder{})
	c := p.ParseConfig(routing.Name, cfg)
	if err := p.UpdateAddresses(c, lbtest.PathAddr("10.0.0.1:80", "a"), lbtest.PathAddr("10.0.0.2:80", "b")); err != nil {
		t.Fatalf("%v", err)
	}
	a, b := p.SubConnFor("10.0.0.1:80"), p.SubConnFor("10.0.0.2:80")
	return p, a, b
}

// Requests reach the cluster their route names: by header, by path, and
// by an exact 3:1 split; the route's timeout comes with the pick; a
// cluster that is not READY gets its routed requests anyway (queued by its
// own picker), and a request no route takes is dropped.
func TestRoutesPicksToClusters(t *testing.T) {
	t.Parallel()
	p, a, b := newRouting(t, twoClusters)
	pick := func(path string, h http.Header) (lb.PickResult, error) {
		return p.State().Picker.Pick(lb.PickInfo{Ctx: context.Background(), Authority: "svc", HTTPMethod: "GET", Method: path, Metadata: h})
	}
	if _, err := pick("/a", nil); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Fatalf("before READY: %v, want the cluster's queue", err)
	}
	a.(*lbtest.SubConn).Ready()
	p.WantState(lb.Ready)
	if _, err := pick("/a", http.Header{"X-B": {"1"}}); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		t.Fatalf("a request routed to b, not READY: %v, want b's queue", err)
	}
	b.(*lbtest.SubConn).Ready()
	res, err := pick("/a", nil)
	if err != nil || res.SubConn != a || res.Timeout != 2*time.Second {
		t.Fatalf("/a: %v, %v, timeout %v; want a with 2s", res.SubConn, err, res.Timeout)
	}
	if res, _ := pick("/a/x", http.Header{"X-B": {""}}); res.SubConn != b || res.Timeout != 0 {
		t.Fatalf("/a with x-b: %v timeout %v, want b, no timeout", res.SubConn, res.Timeout)
	}
	counts := map[lb.SubConn]int{}
	for range 400 {
		res, err := pick("/other", nil)
		if err != nil {
			t.Fatal(err)
		}
		counts[res.SubConn]++
	}
	if counts[a] != 300 || counts[b] != 100 {
		t.Fatalf("3:1 split over 400 picks: a %d, b %d", counts[a], counts[b])
	}
	_, err = p.State().Picker.Pick(lb.PickInfo{Ctx: context.Background(), Authority: "other", Method: "/"})
	if !errors.Is(err, lb.ErrDropped) {
		t.Fatalf("unknown authority: %v, want a drop", err)
	}
}

// Picking allocates nothing on the READY path.
func TestPickDoesNotAllocate(t *testing.T) {
	p, a, b := newRouting(t, twoClusters)
	a.(*lbtest.SubConn).Ready()
	b.(*lbtest.SubConn).Ready()
	picker := p.State().Picker
	info := lb.PickInfo{Ctx: context.Background(), Authority: "svc", HTTPMethod: "GET", Method: "/x", Metadata: http.Header{"X-B": {"1"}}}
	if n := testing.AllocsPerRun(200, func() { _, _ = picker.Pick(info) }); n != 0 {
		t.Fatalf("Pick allocates %v times", n)
	}
}

// Bad configs name the field.
func TestParseRejects(t *testing.T) {
	t.Parallel()
	reg := lbtest.NewRegistry()
	b := routing.Builder{}.InRegistry(reg)
	for _, tc := range []struct{ js, path string }{
		{`{"routeConfig": {"virtualHosts": [{"domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "a"}}]}]}, "clusters": {}}`, "clusters"},
		{`{"routeConfig": {"virtualHosts": [{"domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "a"}}]}]}, "clusters": {"a": {"childPolicy": [{"test_leaf": {}}]}, "b": {"childPolicy": [{"test_leaf": {}}]}}}`, `clusters["b"]`},
		{`{"routeConfig": {"virtualHosts": [{"domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "a"}}]}]}, "clusters": {"a": {"childPolicy": []}}}`, `clusters["a"].childPolicy`},
		{`{"routeConfig": {"virtualHosts": [{"domains": ["*"], "routes": [{"match": {"safeRegex": {"regex": "\\"}}, "route": {"cluster": "a"}}]}]}, "clusters": {"a": {"childPolicy": [{"test_leaf": {}}]}}}`, "routeConfig.virtualHosts[0].routes[0].match.safeRegex.regex"},
	} {
		_, _, err := lb.ParseConfig(b, []byte(tc.js))
		lbtest.WantConfigError(t, tc.js, err, tc.path)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(twoClusters))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"routeConfig": {"virtualHosts": [{"domains": ["*"], "routes": [{"match": {"path": "/"}, "route": {"cluster": "a"}}]}]}, "clusters": {"a": {"child_policy": [{"test_leaf": {}}]}}}`))
	reg := lbtest.NewRegistry()
	b := routing.Builder{}.InRegistry(reg)
	f.Fuzz(func(t *testing.T, raw []byte) {
		lbtest.CheckConfigParse(t, b, raw)
	})
}

// A hand-built config whose routes name a cluster without a policy is
// refused, not a panic.
func TestHandBuiltConfigIsValidated(t *testing.T) {
	t.Parallel()
	tab, _, err := route.Parse([]byte(`{"virtualHosts": [{"domains": ["*"], "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "a"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := lbtest.NewParent(t)
	p.Build(routing.Builder{})
	for _, cfg := range []*routing.Config{{}, {Routes: tab}, {Routes: tab, Clusters: map[string]*lb.ParsedPolicy{"a": nil}}} {
		if err := p.UpdateAddresses(cfg); err == nil || !strings.Contains(err.Error(), "invalid config") {
			t.Errorf("config %+v: %v, want invalid config", cfg, err)
		}
	}
}
