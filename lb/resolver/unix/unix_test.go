package unix_test

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRegistered(t *testing.T) {
	for _, s := range []string{unix.Scheme, unix.AbstractScheme} {
		if b := resolver.Get(s); b == nil || b.Scheme() != s {
			t.Errorf("resolver.Get(%q) = %v, want the %s builder", s, b, s)
		}
	}
}

func TestBuildPublishesSocketPath(t *testing.T) {
	tests := []struct{ target, want string }{
		{"unix:app.sock", "app.sock"},
		{"unix:rel/dir/app.sock", "rel/dir/app.sock"},
		{"unix:/run/app.sock", "/run/app.sock"},
		{"unix:///run/app.sock", "/run/app.sock"},
		{"unix:///run/my%20app.sock", "/run/my app.sock"},
		{"unix-abstract:name", "@name"},
		{"unix-abstract:///name", "@/name"},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			tg, err := resolver.ParseTarget(tc.target, "dns")
			if err != nil {
				t.Fatal(err)
			}
			cc := &lbtest.ResolverClientConn{}
			r, err := resolver.Get(tg.Scheme).Build(tg, cc, resolver.BuildOptions{})
			if err != nil {
				t.Fatalf("Build(%v): %v", tg, err)
			}
			r.ResolveNow()
			r.Close()
			if len(cc.States()) != 1 || len(cc.States()[0].Addresses) != 1 || len(cc.Errors()) != 0 {
				t.Fatalf("published %v and errors %v, want one address and no error", cc.States(), cc.Errors())
			}
			a := cc.States()[0].Addresses[0]
			if a.Addr != tc.want {
				t.Errorf("Addr = %q, want %q", a.Addr, tc.want)
			}
			if n, ok := unix.Network(a); n != "unix" || !ok {
				t.Errorf("Network(%v) = %q, %v; want \"unix\", true", a, n, ok)
			}
		})
	}
}

func TestNetworkOfOtherAddresses(t *testing.T) {
	if n, ok := unix.Network(resolver.Address{Addr: "10.0.0.1:80"}); n != "" || ok {
		t.Errorf("Network of a plain address = %q, %v; want \"\", false", n, ok)
	}
}

func TestBuildRejectsBadTargets(t *testing.T) {
	tests := []struct {
		b      unix.Builder
		target resolver.Target
		want   string
	}{
		{unix.Builder{}, resolver.Target{Scheme: "unix"}, "unix: empty socket path"},
		{unix.Builder{Abstract: true}, resolver.Target{Scheme: "unix-abstract"}, "unix-abstract: empty socket path"},
		{unix.Builder{}, resolver.Target{Scheme: "unix", Authority: "host", Endpoint: "/p"}, `unix: authority "host" is not supported`},
	}
	for _, tc := range tests {
		cc := &lbtest.ResolverClientConn{}
		r, err := tc.b.Build(tc.target, cc, resolver.BuildOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%#v) = %v, %v; want an error containing %q", tc.target, r, err, tc.want)
		}
		if len(cc.States()) != 0 {
			t.Errorf("published %v after a failed Build", cc.States())
		}
	}
}

// TestPublishedAddressDials checks the documented dialing rule against a
// real socket: Network(addr) and addr.Addr go straight to net.Dial.
func TestPublishedAddressDials(t *testing.T) {
	targets := map[string]string{"path": "unix://" + t.TempDir() + "/app.sock"}
	if runtime.GOOS == "linux" {
		targets["abstract"] = "unix-abstract:lbkit-test-" + strconv.Itoa(os.Getpid())
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			tg, err := resolver.ParseTarget(target, "dns")
			if err != nil {
				t.Fatal(err)
			}
			cc := &lbtest.ResolverClientConn{}
			r, err := resolver.Get(tg.Scheme).Build(tg, cc, resolver.BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			a := cc.States()[0].Addresses[0]
			network, _ := unix.Network(a)
			ln, err := net.Listen(network, a.Addr)
			if err != nil {
				t.Fatalf("Listen(%q, %q): %v", network, a.Addr, err)
			}
			defer ln.Close()
			conn, err := net.Dial(network, a.Addr)
			if err != nil {
				t.Fatalf("Dial(%q, %q): %v", network, a.Addr, err)
			}
			conn.Close()
		})
	}
}
