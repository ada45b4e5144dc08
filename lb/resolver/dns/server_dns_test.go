package dns_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/internal/dnstest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/dns"
)

// These tests use the default lookup (Go's own resolver) against a DNS
// server on 127.0.0.1 named by the target's authority. Nothing leaves the
// loopback interface.

// startDNSServer serves records (name: addresses) until the test ends.
func startDNSServer(t *testing.T, records map[string][]netip.Addr) *dnstest.Server {
	t.Helper()
	srv, err := dnstest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for name, a := range records {
		srv.Set(name, a...)
	}
	return srv
}

func ips(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// sortedAddrs returns the Addr fields of st's addresses, sorted: Go's
// resolver orders them by RFC 6724.
func sortedAddrs(st resolver.State) []string {
	got := make([]string, len(st.Addresses))
	for i, a := range st.Addresses {
		got[i] = a.Addr
	}
	slices.Sort(got)
	return got
}

func TestAuthorityServerIsAsked(t *testing.T) {
	srv := startDNSServer(t, map[string][]netip.Addr{
		"a.test.": ips("127.0.0.2", "127.0.0.3", "::1"),
	})
	cc := &fakeCC{}
	build(t, mustBuilder(t), "dns://"+srv.Addr()+"/a.test:8080", cc, clock.NewMock())
	if got, want := sortedAddrs(cc.NextState(t)), []string{"127.0.0.2:8080", "127.0.0.3:8080", "[::1]:8080"}; !slices.Equal(got, want) {
		t.Errorf("published %v, want %v in some order", got, want)
	}
	if q := srv.Queries(); !slices.Contains(q, "a.test. A") || !slices.Contains(q, "a.test. AAAA") {
		t.Errorf("server saw %v, want A and AAAA questions for a.test.", q)
	}
}

func TestAuthorityServerNXDomainIsReported(t *testing.T) {
	srv := startDNSServer(t, map[string][]netip.Addr{})
	cc := &fakeCC{}
	build(t, mustBuilder(t), "dns://"+srv.Addr()+"/missing.test", cc, clock.NewMock())
	if err := cc.NextError(t); !strings.Contains(err.Error(), `dns: resolving "missing.test"`) || !strings.Contains(err.Error(), "no such host") {
		t.Errorf("reported %v, want a no-such-host error naming the host", err)
	}
}

func TestAuthorityWithoutPortIsValid(t *testing.T) {
	tg, err := resolver.ParseTarget("dns://127.0.0.1/a.test", "dns")
	if err != nil {
		t.Fatal(err)
	}
	if err := mustBuilder(t).ValidateTarget(tg); err != nil {
		t.Errorf("ValidateTarget(%v) = %v", tg, err)
	}
}

// The resolver polls: addresses added to and removed from the server's
// answer are published one poll interval after the previous resolution
// started, and not before.
func TestPollingSeesAddressesAddedAndRemoved(t *testing.T) {
	srv := startDNSServer(t, map[string][]netip.Addr{"a.test": ips("127.0.0.2")})
	clk := clock.NewMock()
	cc := &fakeCC{}
	b := mustBuilder(t, dns.WithPollInterval(10*time.Second), dns.WithMinResolutionInterval(5*time.Second))
	build(t, b, "dns://"+srv.Addr()+"/a.test:80", cc, clk)
	if got := sortedAddrs(cc.NextState(t)); !slices.Equal(got, []string{"127.0.0.2:80"}) {
		t.Fatalf("first resolution published %v", got)
	}
	for i, step := range []struct {
		answer []netip.Addr
		want   []string
	}{
		{ips("127.0.0.2", "127.0.0.3"), []string{"127.0.0.2:80", "127.0.0.3:80"}},
		{ips("127.0.0.3", "127.0.0.4"), []string{"127.0.0.3:80", "127.0.0.4:80"}},
		{ips("127.0.0.4"), []string{"127.0.0.4:80"}},
	} {
		srv.Set("a.test", step.answer...)
		asked := len(srv.Queries())
		clk.Add(10*time.Second - time.Nanosecond)
		if q := srv.Queries(); len(q) != asked || len(cc.Events.Peek()) != 0 {
			t.Fatalf("poll %d: questions %v and events %v before the poll interval ended", i+1, q[asked:], cc.Events.Peek())
		}
		clk.Add(time.Nanosecond)
		if got := sortedAddrs(cc.NextState(t)); !slices.Equal(got, step.want) {
			t.Errorf("poll %d published %v, want %v", i+1, got, step.want)
		}
	}
}

// A server that answers garbage, never answers, or answers with no
// address: the resolver reports the error, publishes nothing (the channel
// keeps the last good addresses), says why in its Description, and
// recovers at the next success.
func TestBrokenServerKeepsTheLastGoodAddressesAndSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(*dnstest.Server)
		want    string
	}{
		{"garbage", func(s *dnstest.Server) { s.SetMode(dnstest.Garbage) }, "cannot unmarshal DNS message"},
		{"silent", func(s *dnstest.Server) { s.SetMode(dnstest.Silent) }, "lookup timed out after 2s"},
		{"empty", func(s *dnstest.Server) { s.Set("a.test") }, "no such host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startDNSServer(t, map[string][]netip.Addr{"a.test": ips("127.0.0.2")})
			clk := clock.NewMock()
			cc := &fakeCC{}
			b := mustBuilder(t, dns.WithPollInterval(10*time.Second), dns.WithMinResolutionInterval(10*time.Second),
				dns.WithLookupTimeout(2*time.Second))
			r := build(t, b, "dns://"+srv.Addr()+"/a.test:80", cc, clk).(resolver.Describer)
			cc.NextState(t)
			if d := r.Describe(); d.LastError != "" || !slices.Contains(d.Facts, resolver.Fact{Name: "addresses published", Value: "1"}) {
				t.Errorf("Describe() after a success = %+v, want one address published and no error", d)
			}

			tc.breakIt(srv)
			clk.Add(10 * time.Second)
			if tc.name == "silent" {
				waitQuestions(t, srv, 3) // the first answer's 2, then this poll's first
				clk.Add(2 * time.Second)
			}
			err := cc.NextError(t)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("reported %v, want it to contain %q", err, tc.want)
			}
			d := r.Describe()
			if !strings.Contains(d.LastError, tc.want) || !strings.Contains(d.LastError, "keeping the last good addresses") {
				t.Errorf("Describe().LastError = %q, want the reason %q and that the last good addresses stay", d.LastError, tc.want)
			}
			if !slices.Contains(d.Facts, resolver.Fact{Name: "addresses published", Value: "1"}) {
				t.Errorf("Describe().Facts = %v, want the last good count", d.Facts)
			}

			// Repaired: the retry after backoff (1 s ±20 %) publishes again.
			srv.SetMode(dnstest.Answer)
			srv.Set("a.test", ips("127.0.0.5")...)
			clk.Add(2 * time.Second)
			if got := sortedAddrs(cc.NextState(t)); !slices.Equal(got, []string{"127.0.0.5:80"}) {
				t.Errorf("after the repair published %v", got)
			}
			if d := r.Describe(); d.LastError != "" {
				t.Errorf("Describe().LastError = %q after a success, want none", d.LastError)
			}
		})
	}
}

// waitQuestions waits (in real time, bounded) until srv has received n
// questions: the lookup is on its way, so the mock clock may be advanced.
func waitQuestions(t *testing.T, srv *dnstest.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(srv.Queries()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server got questions %v, want %d", srv.Queries(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
