package conn

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// A truncated service config is an error with the byte offset where the
// JSON ends and why, as an EDS file's is (issue 28), not "want a JSON
// object, got invalid JSON".
func TestTruncatedServiceConfigNamesTheOffset(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"loadBalancingConfig":[{"round_robin":{}}`, "invalid JSON at byte 42: "},
		{`{"loadBalancingConfig":[{"round_robin":{}}]`, "invalid JSON at byte 43: "},
		{`{"loadBalancingConfig" [`, "invalid JSON at byte 23: "},
		{"\n  {\"loadBalancingConfig\":", "invalid JSON at byte 26: "},
	} {
		wantNewError(t, tc.want, WithDefaultServiceConfig(tc.json))
	}
}

// wantNewError checks that New with a test resolver and opts fails with an
// error containing want.
func wantNewError(t *testing.T, want string, opts ...Option) {
	t.Helper()
	_, err := New("test:///svc", append([]Option{WithResolver(&testResolver{})}, opts...)...)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New = %v, want an error containing %q", err, want)
	}
}

// An HTTPHealthCheck or a checker that could never work is an error from
// New naming the field, not a check that always fails, always passes or
// crashes the process from a background goroutine (issue 28).
func TestUnusableHealthCheckersAreErrorsAtNew(t *testing.T) {
	for _, tc := range []struct {
		checker HealthChecker
		want    string
	}{
		{HTTPHealthCheck{MinStatus: 300, MaxStatus: 200}, "HTTPHealthCheck.MinStatus: 300 is above MaxStatus 200"},
		{HTTPHealthCheck{MinStatus: 300}, "HTTPHealthCheck.MinStatus: 300 is above MaxStatus 299 (the default)"},
		{HTTPHealthCheck{MaxStatus: 1000}, "HTTPHealthCheck.MaxStatus: 1000 is not an HTTP status (100 to 599)"},
		{HTTPHealthCheck{Host: "http://example.com"}, `HTTPHealthCheck.Host: want a host[:port], got the URL "http://example.com"`},
		{HTTPHealthCheck{Host: "example.com/healthz"}, `HTTPHealthCheck.Host: want a host[:port], got "example.com/healthz" (put the path in Path)`},
		{(*HTTPHealthCheck)(nil), "HealthCheck.Checker: a nil *HTTPHealthCheck"},
		{HealthCheckFunc(nil), "HealthCheck.Checker: a nil HealthCheckFunc"},
	} {
		wantNewError(t, tc.want, WithHealthCheck(HealthCheck{Checker: tc.checker}))
	}
}

// A zero bound of HTTPHealthCheck's status range is its default, whatever
// the other: MinStatus 200 alone is 200 to 299, not "200 to 0", which no
// status passes (issue 28).
func TestHTTPHealthCheckZeroBoundIsItsDefault(t *testing.T) {
	for _, tc := range []struct {
		h      HTTPHealthCheck
		status int
		pass   bool
	}{
		{HTTPHealthCheck{MinStatus: 200}, 200, true},
		{HTTPHealthCheck{MinStatus: 200}, 300, false},
		{HTTPHealthCheck{MaxStatus: 399}, 302, true},
		{HTTPHealthCheck{MaxStatus: 399}, 400, false},
		{HTTPHealthCheck{MinStatus: 204}, 200, false},
		{HTTPHealthCheck{}, 204, true},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tc.status) }))
		err := tc.h.Check(guard(t), resolver.Address{Addr: srv.Listener.Addr().String()}, "")
		srv.Close()
		if (err == nil) != tc.pass {
			t.Errorf("%+v on status %d: %v, want pass %v", tc.h, tc.status, err, tc.pass)
		}
	}
}

// A nil option is New's error, naming its position, not a nil-pointer
// panic (issue 28).
func TestNilOptionIsAnError(t *testing.T) {
	var unset Option
	wantNewError(t, "conn: option 2 of 2 is nil", unset)
}

// Without WithLogger, a channel's warnings reach slog.Default(), so that
// a misspelt service config key is seen without configuring anything;
// its INFO and DEBUG records do not (issue 28). Not parallel: it sets
// slog's default logger.
func TestWarningsReachSlogDefaultWithoutWithLogger(t *testing.T) {
	logs := &lbtest.Logs{}
	prev := slog.Default()
	slog.SetDefault(slog.New(logs))
	t.Cleanup(func() { slog.SetDefault(prev) })
	c, r, _ := newTestChannel(t, WithDefaultServiceConfig(`{"loadBalancingConfg":[{"round_robin":{}}]}`))
	if n := logs.Count(slog.LevelWarn, unknownFieldsWarning); n != 1 {
		t.Fatalf("%d warnings on slog.Default() for a misspelt key, want 1:\n%s", n, logs)
	}
	c.Connect()
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80")})
	settle(t, c)
	if below := logs.Count(slog.LevelDebug, "") - logs.Count(slog.LevelWarn, ""); below != 0 {
		t.Fatalf("%d records below WARN reached slog.Default():\n%s", below, logs)
	}
}

// WithHealthCheck under a policy that does not health-check (pick_first,
// as gRFC A17 says) is a warning, once, naming the policy: not a silent
// no-op (issue 28).
func TestHealthCheckUnderPickFirstWarnsOnce(t *testing.T) {
	const warning = "health checking is on, but the policy does not ask for it"
	logs := &lbtest.Logs{}
	c, r, _ := newTestChannel(t, WithLogger(slog.New(logs)), WithHealthCheck(HealthCheck{Checker: newScriptedChecker()}))
	c.Connect()
	for _, a := range []string{"10.0.0.1:80", "10.0.0.2:80"} {
		r.update(t, resolver.State{Addresses: addrs(a)})
		settle(t, c)
	}
	if n := logs.Count(slog.LevelWarn, warning); n != 1 || !strings.Contains(logs.String(), "policy=pick_first") {
		t.Fatalf("%d warnings naming pick_first, want 1:\n%s", n, logs)
	}

	// Turned on by the service config after pick_first connected.
	logs = &lbtest.Logs{}
	c, r, _ = newTestChannel(t, WithLogger(slog.New(logs)))
	c.Connect()
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80")})
	settle(t, c)
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80"), ServiceConfig: []byte(`{"healthCheckConfig":{"serviceName":"svc"}}`)})
	settle(t, c)
	if n := logs.Count(slog.LevelWarn, warning); n != 1 {
		t.Fatalf("health checking turned on by the service config under pick_first: %d warnings, want 1:\n%s", n, logs)
	}

	logs = &lbtest.Logs{}
	rr, r, _ := newTestChannel(t, WithLogger(slog.New(logs)), WithHealthCheck(HealthCheck{Checker: newScriptedChecker()}),
		WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	rr.Connect()
	r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80")})
	settle(t, rr)
	if n := logs.Count(slog.LevelWarn, warning); n != 0 {
		t.Fatalf("round_robin, which health-checks: %d warnings, want none:\n%s", n, logs)
	}
}

// A priority or weighted_target tree whose addresses carry no hierarchy
// path fails picks with an error that says so, not with "resolver produced
// zero addresses" alone (issue 28).
func TestTreeWithoutHierarchyPathsSaysSo(t *testing.T) {
	for _, sc := range []string{
		`{"loadBalancingConfig":[{"priority_experimental":{"children":{"p0":{"config":[{"round_robin":{}}]}},"priorities":["p0"]}}]}`,
		`{"loadBalancingConfig":[{"weighted_target_experimental":{"targets":{"a":{"weight":1,"childPolicy":[{"round_robin":{}}]}}}}]}`,
	} {
		c, r, _ := newTestChannel(t, WithDefaultServiceConfig(sc), WithLogger(slog.New(slog.DiscardHandler)))
		c.Connect()
		r.update(t, resolver.State{Addresses: addrs("10.0.0.1:80", "10.0.0.2:80")})
		settle(t, c)
		_, err := c.Pick(guard(t), PickOptions{})
		const want = "2 address(es) without a hierarchy path were dropped (set each one's path with hierarchy.Set)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Pick = %v, want an error containing %q", sc, err, want)
		}
	}
}

// grpc-go's weighted_round_robin config (gRFC A58's load report fields)
// parses, and the one field lbkit cannot honour, enableOobLoadReport: true,
// is refused with the reason rather than accepted without a word (issue
// 26; issue 28 warned about every A58 field before lbkit read them).
func TestGRPCWeightedRoundRobinOutOfBandRefused(t *testing.T) {
	_, err := New("test:///svc", WithResolver(&testResolver{}), WithDefaultServiceConfig(`{"loadBalancingConfig":[{"weighted_round_robin":{"enableOobLoadReport":true,"blackoutPeriod":"10s"}}]}`))
	const want = "loadBalancingConfig[0].weighted_round_robin.enableOobLoadReport: true asks for out-of-band load reports"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "lbkit does not implement") {
		t.Fatalf("New = %v, want an error containing %q and saying lbkit does not implement it", err, want)
	}
	newTestChannel(t, WithDefaultServiceConfig(`{"loadBalancingConfig":[{"weighted_round_robin":{"enableOobLoadReport":false,"blackoutPeriod":"10s","weightUpdatePeriod":"0.5s"}}]}`))
}
