package passthrough_test

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/passthrough"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRegistered(t *testing.T) {
	if b := resolver.Get(passthrough.Scheme); b == nil || b.Scheme() != "passthrough" {
		t.Fatalf("resolver.Get(%q) = %v, want the passthrough builder", passthrough.Scheme, b)
	}
}

func TestBuildPublishesEndpointOnce(t *testing.T) {
	for _, target := range []string{"passthrough:///10.0.0.1:80", "passthrough://ignored/10.0.0.1:80", "passthrough:10.0.0.1:80"} {
		t.Run(target, func(t *testing.T) {
			tg, err := resolver.ParseTarget(target, "dns")
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
			want := []resolver.State{{Addresses: []resolver.Address{{Addr: "10.0.0.1:80"}}}}
			if !reflect.DeepEqual(cc.States(), want) || len(cc.Errors()) != 0 {
				t.Errorf("published %v and errors %v, want %v and none", cc.States(), cc.Errors(), want)
			}
		})
	}
}

func TestBuildEmptyEndpointFails(t *testing.T) {
	cc := &lbtest.ResolverClientConn{}
	r, err := passthrough.Builder{}.Build(resolver.Target{Scheme: passthrough.Scheme}, cc, resolver.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "passthrough: empty endpoint") {
		t.Fatalf("Build with an empty endpoint = %v, %v; want an error naming the empty endpoint", r, err)
	}
	if len(cc.States()) != 0 {
		t.Errorf("published %v after a failed Build", cc.States())
	}
}

func TestRejectedUpdateIsLogged(t *testing.T) {
	logs := &lbtest.Logs{}
	cc := &lbtest.ResolverClientConn{}
	cc.FailUpdates(errors.New("bad state")) // passthrough publishes once
	opts := resolver.BuildOptions{Logger: slog.New(logs)}
	r, err := passthrough.Builder{}.Build(resolver.Target{Scheme: passthrough.Scheme, Endpoint: "a:1"}, cc, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !strings.Contains(logs.String(), "bad state") {
		t.Errorf("log %q does not mention the rejection", logs.String())
	}
}
