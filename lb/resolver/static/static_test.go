package static_test

import (
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/static"
	"github.com/lbkit/lbkit/lb/weight"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func addrs(ss ...string) []resolver.Address {
	out := make([]resolver.Address, len(ss))
	for i, s := range ss {
		out[i] = resolver.Address{Addr: s}
	}
	return out
}

func TestRegistered(t *testing.T) {
	if b := resolver.Get(static.Scheme); b == nil || b.Scheme() != "static" {
		t.Fatalf("resolver.Get(%q) = %v, want the static builder", static.Scheme, b)
	}
}

func TestBuildPublishesListInOrder(t *testing.T) {
	tests := []struct {
		target string
		want   []resolver.Address
	}{
		{"static:///a:1,b:2", addrs("a:1", "b:2")},
		{"static:///b:2,a:1,b:2", addrs("b:2", "a:1", "b:2")}, // duplicates kept in order
		{"static:///10.0.0.1:443,[::1]:8080,[fe80::1%25eth0]:1", addrs("10.0.0.1:443", "[::1]:8080", "[fe80::1%eth0]:1")},
		{"static:///a:0080,b:65535", addrs("a:80", "b:65535")}, // canonical ports
		{"static:a:1", addrs("a:1")},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			tg, err := resolver.ParseTarget(tc.target, "dns")
			if err != nil {
				t.Fatal(err)
			}
			cc := &lbtest.ResolverClientConn{}
			r, err := static.Builder{}.Build(tg, cc, resolver.BuildOptions{})
			if err != nil {
				t.Fatalf("Build(%v): %v", tg, err)
			}
			r.ResolveNow()
			r.Close()
			want := []resolver.State{{Addresses: tc.want}}
			if !reflect.DeepEqual(cc.States(), want) || len(cc.Errors()) != 0 {
				t.Errorf("published %v and errors %v, want %v and none", cc.States(), cc.Errors(), want)
			}
		})
	}
}

func TestBuildRejectsBadElements(t *testing.T) {
	tests := []struct {
		target resolver.Target
		want   string
	}{
		{resolver.Target{Endpoint: ""}, "static: empty address list"},
		{resolver.Target{Authority: "a:1", Endpoint: "b:2"}, `static: authority "a:1" is not supported`},
		{resolver.Target{Endpoint: "a:1,"}, `static: element 1 "": empty address`},
		{resolver.Target{Endpoint: "a"}, `static: element 0 "a": missing port in address`},
		{resolver.Target{Endpoint: "a:1,b:2,c:0"}, `static: element 2 "c:0": invalid port "0"`},
		{resolver.Target{Endpoint: "a:1,b:x"}, `static: element 1 "b:x": invalid port "x"`},
		{resolver.Target{Endpoint: "a:1,b:65536"}, `static: element 1 "b:65536": invalid port "65536"`},
		{resolver.Target{Endpoint: "::1:80"}, `static: element 0 "::1:80": too many colons in address`},
		{resolver.Target{Endpoint: ":80"}, `static: element 0 ":80": empty host`},
		{resolver.Target{Endpoint: "a b:80"}, `static: element 0 "a b:80": host "a b" contains white space`},
		{resolver.Target{Endpoint: "a:1=0"}, `static: element 0 "a:1=0": invalid weight "0"`},
		{resolver.Target{Endpoint: "a:1=2,b:1=x"}, `static: element 1 "b:1=x": invalid weight "x"`},
		{resolver.Target{Endpoint: "a:1=4294967296"}, `static: element 0 "a:1=4294967296": invalid weight`},
		{resolver.Target{Endpoint: "a:1="}, `static: element 0 "a:1=": invalid weight ""`},
	}
	for _, tc := range tests {
		t.Run(tc.target.Endpoint, func(t *testing.T) {
			tc.target.Scheme = static.Scheme
			cc := &lbtest.ResolverClientConn{}
			r, err := static.Builder{}.Build(tc.target, cc, resolver.BuildOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build(%#v) = %v, %v; want an error containing %q", tc.target, r, err, tc.want)
			}
			if verr := (static.Builder{}).ValidateTarget(tc.target); verr == nil || verr.Error() != err.Error() {
				t.Errorf("ValidateTarget = %v, want Build's error %v", verr, err)
			}
			if len(cc.States()) != 0 {
				t.Errorf("published %v after a failed Build", cc.States())
			}
		})
	}
}

func TestWeightsInTheTarget(t *testing.T) {
	addrs, err := static.ParseAddresses(resolver.Target{Scheme: static.Scheme, Endpoint: "10.0.0.1:80=1,10.0.0.2:80,[::1]:80=4294967295"})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		addr   string
		weight uint32
		has    bool
	}{{"10.0.0.1:80", 1, true}, {"10.0.0.2:80", 0, false}, {"[::1]:80", 4294967295, true}}
	for i, w := range want {
		got, ok := weight.Get(addrs[i])
		if addrs[i].Addr != w.addr || ok != w.has || got != w.weight {
			t.Errorf("address %d = %v (weight %d, %v), want %s weight %d, %v", i, addrs[i], got, ok, w.addr, w.weight, w.has)
		}
	}
}
