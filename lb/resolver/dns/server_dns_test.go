package dns_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/resolver"
)

// These tests use the default lookup (Go's own resolver) against a DNS
// server on 127.0.0.1 named by the target's authority. Nothing leaves the
// loopback interface.

func TestAuthorityServerIsAsked(t *testing.T) {
	srv := startDNSServer(t, map[string][]netip.Addr{
		"a.test.": {netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("::1")},
	})
	cc := &fakeCC{}
	build(t, mustBuilder(t), "dns://"+srv.Addr()+"/a.test:8080", cc, clock.NewMock())
	st := cc.NextState(t)
	got := make([]string, len(st.Addresses))
	for i, a := range st.Addresses {
		got[i] = a.Addr
	}
	slices.Sort(got) // Go's resolver orders by RFC 6724
	if want := []string{"127.0.0.2:8080", "127.0.0.3:8080", "[::1]:8080"}; !slices.Equal(got, want) {
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
