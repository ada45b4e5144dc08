package draining_test

import (
	"slices"
	"testing"

	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

func TestSetIsClear(t *testing.T) {
	a := weight.Set(resolver.Address{Addr: "10.0.0.1:80"}, 3)
	if draining.Is(a) {
		t.Fatalf("Is(%v) = true before Set", a)
	}
	d := draining.Set(a)
	if !draining.Is(d) || draining.Is(a) {
		t.Fatalf("Is(Set(a)) = %v, Is(a) = %v; want true, false (Set must not change a)", draining.Is(d), draining.Is(a))
	}
	if d == a {
		t.Fatalf("Set(%v) compares equal to the unmarked address", a)
	}
	if c := draining.Clear(d); c != a || draining.Is(c) {
		t.Fatalf("Clear(Set(a)) = %v, want %v", c, a)
	}
	if w, _ := weight.Get(d); w != 3 {
		t.Fatalf("Set dropped the weight: %d", w)
	}
}

func TestLastIsStable(t *testing.T) {
	a, b, c, d := resolver.Address{Addr: "a"}, resolver.Address{Addr: "b"}, resolver.Address{Addr: "c"}, resolver.Address{Addr: "d"}
	got := draining.Last([]resolver.Address{draining.Set(a), b, draining.Set(c), d})
	want := []resolver.Address{b, d, draining.Set(a), draining.Set(c)}
	if !slices.Equal(got, want) {
		t.Errorf("Last = %v, want %v", got, want)
	}
	plain := []resolver.Address{a, b}
	if got := draining.Last(plain); !slices.Equal(got, []resolver.Address{a, b}) {
		t.Errorf("Last without a draining address = %v, want it unchanged", got)
	}
}
