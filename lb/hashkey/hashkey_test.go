package hashkey_test

import (
	"testing"

	"github.com/lbkit/lbkit/lb/hashkey"
	"github.com/lbkit/lbkit/lb/resolver"
)

func TestSetGetClear(t *testing.T) {
	a := resolver.Address{Addr: "10.0.0.1:80"}
	if hashkey.Get(a) != "" {
		t.Fatal("a fresh address has a hash key")
	}
	b := hashkey.Set(a, "pod-0")
	if got := hashkey.Get(b); got != "pod-0" {
		t.Fatalf("Get = %q", got)
	}
	if hashkey.Get(a) != "" {
		t.Fatal("Set changed its argument")
	}
	if !hashkey.Clear(b).Equal(a) || !hashkey.Set(b, "").Equal(a) {
		t.Fatal("Clear (or Set with \"\") leaves something behind")
	}
}
