package hierarchy_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

func addr(s string, path ...string) resolver.Address {
	a := resolver.Address{Addr: s}
	if path != nil {
		a = hierarchy.Set(a, path)
	}
	return a
}

// The example of gRFC A56, "Hierarchical Addresses".
func TestGroupA56Example(t *testing.T) {
	addrs := []resolver.Address{
		addr("10.0.0.1:80", "child0", "localityA"),
		addr("10.0.0.2:80", "child0", "localityB"),
		addr("10.0.0.3:80", "child1", "localityC"),
		addr("10.0.0.4:80", "child1", "localityD"),
	}
	g := hierarchy.Group(addrs)
	if g.Dropped != 0 || g.Err() != nil {
		t.Fatalf("dropped %d (%v), want 0", g.Dropped, g.Err())
	}
	if want := []string{"child0", "child1"}; !slices.Equal(g.Order, want) {
		t.Fatalf("Order = %v, want %v", g.Order, want)
	}
	child0 := hierarchy.Group(g.Children["child0"])
	if got := child0.Children["localityA"]; len(got) != 1 || got[0] != (resolver.Address{Addr: "10.0.0.1:80"}) {
		t.Errorf("localityA = %v, want the plain address 10.0.0.1:80 with no path", got)
	}
	if p, ok := hierarchy.Get(g.Children["child1"][1]); !ok || !slices.Equal(p, []string{"localityD"}) {
		t.Errorf("child1[1] path = %v, %v; want [localityD]", p, ok)
	}
}

func TestGroupDropsAddressesWithoutPathAndSaysSo(t *testing.T) {
	g := hierarchy.Group([]resolver.Address{addr("a"), addr("b", "x"), addr("c")})
	if g.Dropped != 2 {
		t.Fatalf("Dropped = %d, want 2", g.Dropped)
	}
	if g.Err() == nil {
		t.Fatalf("Err() = nil, want an error counting the drops")
	}
}

func TestSetKeepsOtherAttributes(t *testing.T) {
	a := hierarchy.Set(weight.Set(resolver.Address{Addr: "a"}, 7), []string{"p", "q"})
	g := hierarchy.Group([]resolver.Address{a})
	got := g.Children["p"][0]
	if w, ok := weight.Get(got); !ok || w != 7 {
		t.Errorf("weight after grouping = %d, %v; want 7, true", w, ok)
	}
	if p, _ := hierarchy.Get(got); !slices.Equal(p, []string{"q"}) {
		t.Errorf("path after grouping = %v, want [q]", p)
	}
}

func TestPathElementsMayHoldAnyBytes(t *testing.T) {
	path := []string{"", "a\x00b", "\xff", "é"}
	got, ok := hierarchy.Get(hierarchy.Set(resolver.Address{}, path))
	if !ok || !slices.Equal(got, path) {
		t.Fatalf("round trip = %q, %v; want %q", got, ok, path)
	}
}

// Property (issue: "hierarchy grouping"): set a path on each address, group,
// and get each group back in order with the first element stripped;
// addresses without a path are dropped and counted.
func TestPropertyGroup(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := []string{"c0", "c1", "c2"}
		n := rapid.IntRange(0, 20).Draw(t, "n")
		var addrs []resolver.Address
		var paths [][]string // nil: no path
		for i := range n {
			a := resolver.Address{Addr: fmt.Sprintf("10.0.0.%d:80", i)}
			if rapid.IntRange(0, 4).Draw(t, "noPath") == 0 {
				addrs, paths = append(addrs, a), append(paths, nil)
				continue
			}
			p := rapid.SliceOfN(rapid.SampledFrom(names), 1, 3).Draw(t, "path")
			addrs, paths = append(addrs, hierarchy.Set(a, p)), append(paths, p)
		}
		g := hierarchy.Group(addrs)
		wantChildren := map[string][]int{}
		var wantOrder []string
		dropped := 0
		for i, p := range paths {
			if p == nil {
				dropped++
				continue
			}
			if _, ok := wantChildren[p[0]]; !ok {
				wantOrder = append(wantOrder, p[0])
			}
			wantChildren[p[0]] = append(wantChildren[p[0]], i)
		}
		if g.Dropped != dropped || (g.Err() == nil) != (dropped == 0) {
			t.Fatalf("Dropped = %d (err %v), want %d", g.Dropped, g.Err(), dropped)
		}
		if !slices.Equal(g.Order, wantOrder) {
			t.Fatalf("Order = %v, want %v", g.Order, wantOrder)
		}
		if len(g.Children) != len(wantChildren) {
			t.Fatalf("%d children, want %d", len(g.Children), len(wantChildren))
		}
		for name, idx := range wantChildren {
			got := g.Children[name]
			if len(got) != len(idx) {
				t.Fatalf("child %s has %d addresses, want %d", name, len(got), len(idx))
			}
			for j, i := range idx {
				if got[j].Addr != addrs[i].Addr {
					t.Fatalf("child %s[%d] = %s, want %s (order kept)", name, j, got[j].Addr, addrs[i].Addr)
				}
				rest, has := hierarchy.Get(got[j])
				if want := paths[i][1:]; !slices.Equal(rest, want) || has != (len(want) > 0) {
					t.Fatalf("child %s[%d] path = %v (has %v), want %v", name, j, rest, has, want)
				}
			}
		}
	})
}

// FuzzHierarchy: any path round-trips through Set/Get and Group, and no
// input panics.
func FuzzHierarchy(f *testing.F) {
	f.Add("10.0.0.1:80", "p0", "locA", uint32(3))
	f.Add("", "", "", uint32(0))
	f.Add("[::1]:443", "a\x00b", "\xff\xfe", uint32(1<<32-1))
	f.Fuzz(func(t *testing.T, a, p1, p2 string, w uint32) {
		base := weight.Set(resolver.Address{Addr: a}, w)
		addrWithPath := hierarchy.Set(base, []string{p1, p2})
		got, ok := hierarchy.Get(addrWithPath)
		if !ok || !slices.Equal(got, []string{p1, p2}) {
			t.Fatalf("Get = %q, %v; want [%q %q]", got, ok, p1, p2)
		}
		g := hierarchy.Group([]resolver.Address{addrWithPath, base})
		if g.Dropped != 1 || len(g.Children[p1]) != 1 {
			t.Fatalf("Group = %+v; want one child %q and one drop", g, p1)
		}
		leaf := hierarchy.Group(g.Children[p1]).Children[p2]
		if len(leaf) != 1 || leaf[0] != base {
			t.Fatalf("leaf = %v, want %v", leaf, base)
		}
		if gw, _ := weight.Get(leaf[0]); gw != w {
			t.Fatalf("weight = %d, want %d", gw, w)
		}
	})
}
