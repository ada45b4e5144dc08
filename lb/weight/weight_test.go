package weight_test

import (
	"testing"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

func TestSetGetClear(t *testing.T) {
	a := resolver.Address{Addr: "10.0.0.1:80"}
	if w, ok := weight.Get(a); ok || w != 0 {
		t.Fatalf("Get on an address without weight = %d, %v; want 0, false", w, ok)
	}
	b := weight.Set(a, 0)
	if w, ok := weight.Get(b); !ok || w != 0 {
		t.Fatalf("an explicit 0 must be distinguishable from absent: got %d, %v", w, ok)
	}
	c := weight.Set(b, 7)
	if w, _ := weight.Get(c); w != 7 {
		t.Fatalf("Get = %d, want 7", w)
	}
	if w, _ := weight.Get(b); w != 0 {
		t.Fatalf("Set changed its argument")
	}
	if weight.Set(a, 3) == weight.Set(a, 4) {
		t.Fatalf("addresses with different weights compare equal")
	}
	if weight.Clear(weight.Set(a, 3)) != weight.Clear(weight.Set(a, 4)) || weight.Clear(c) != a {
		t.Fatalf("Clear does not make weight-only differences equal")
	}
}
