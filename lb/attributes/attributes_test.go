package attributes_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb/attributes"
)

var (
	keyA   = attributes.NewKey[int]("a")
	keyB   = attributes.NewKey[string]("b")
	keyC   = attributes.NewKey[int]("c")
	keyAst = attributes.NewKey[string]("a") // same name as keyA, other type
)

func TestGetWithWithout(t *testing.T) {
	var a attributes.Attributes
	if _, ok := attributes.Get(a, keyA); ok {
		t.Fatalf("Get on empty set: found a value")
	}
	b := attributes.With(a, keyA, 1)
	c := attributes.With(b, keyAst, "x")
	if v, ok := attributes.Get(c, keyA); !ok || v != 1 {
		t.Errorf("Get(keyA) = %v, %v; want 1, true", v, ok)
	}
	if v, ok := attributes.Get(c, keyAst); !ok || v != "x" {
		t.Errorf("Get(keyAst) = %q, %v; want x, true", v, ok)
	}
	if a.Len() != 0 || b.Len() != 1 || c.Len() != 2 {
		t.Errorf("lens = %d, %d, %d; want 0, 1, 2 (With must not change its receiver)", a.Len(), b.Len(), c.Len())
	}
	d := attributes.With(c, keyA, 2)
	if v, _ := attributes.Get(d, keyA); v != 2 {
		t.Errorf("replaced value = %v, want 2", v)
	}
	if v, _ := attributes.Get(c, keyA); v != 1 {
		t.Errorf("original changed by replace: %v, want 1", v)
	}
	e := attributes.Without(d, keyA)
	if _, ok := attributes.Get(e, keyA); ok || e.Len() != 1 {
		t.Errorf("Without: still has keyA or len %d != 1", e.Len())
	}
	if got := attributes.Without(e, keyC); got != e {
		t.Errorf("Without absent key changed the set")
	}
	if got, want := c.String(), "{a: 1, a: x}"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestNewKeyRejectsInterfaceTypes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatalf("NewKey[any] did not panic")
		}
	}()
	attributes.NewKey[any]("bad")
}

// op is one With or Without in a generated sequence.
type op struct {
	key    int // 0: keyA, 1: keyB, 2: keyC
	remove bool
	val    int
}

func (o op) String() string {
	if o.remove {
		return fmt.Sprintf("without(%d)", o.key)
	}
	return fmt.Sprintf("with(%d=%d)", o.key, o.val)
}

func apply(a attributes.Attributes, o op) attributes.Attributes {
	switch {
	case o.key == 0 && o.remove:
		return attributes.Without(a, keyA)
	case o.key == 0:
		return attributes.With(a, keyA, o.val)
	case o.key == 1 && o.remove:
		return attributes.Without(a, keyB)
	case o.key == 1:
		return attributes.With(a, keyB, fmt.Sprint(o.val))
	case o.remove:
		return attributes.Without(a, keyC)
	default:
		return attributes.With(a, keyC, o.val)
	}
}

// model is the reference: a plain map from key index to value.
func model(ops []op) map[int]int {
	m := map[int]int{}
	for _, o := range ops {
		if o.remove {
			delete(m, o.key)
		} else {
			m[o.key] = o.val
		}
	}
	return m
}

func genOps(t *rapid.T, label string) []op {
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) op {
		return op{key: rapid.IntRange(0, 2).Draw(t, "key"), remove: rapid.Bool().Draw(t, "remove"), val: rapid.IntRange(0, 3).Draw(t, "val")}
	}), 0, 12).Draw(t, label)
}

func build(ops []op) (attributes.Attributes, []attributes.Attributes) {
	var a attributes.Attributes
	var history []attributes.Attributes
	for _, o := range ops {
		history = append(history, a)
		a = apply(a, o)
	}
	return a, history
}

// Property: two sets are == exactly when they hold the same values,
// whatever the order of operations, and building never changes a set
// already built (immutability).
func TestPropertyEqualityAndImmutability(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops1, ops2 := genOps(t, "ops1"), genOps(t, "ops2")
		a1, hist := build(ops1)
		a2, _ := build(ops2)
		m1, m2 := model(ops1), model(ops2)
		same := len(m1) == len(m2)
		for k, v := range m1 {
			if w, ok := m2[k]; !ok || w != v {
				same = false
			}
		}
		if (a1 == a2) != same {
			t.Fatalf("a1 == a2 is %v, but models equal is %v (%v vs %v)", a1 == a2, same, a1, a2)
		}
		// A map keyed by attributes agrees with ==.
		set := map[attributes.Attributes]bool{a1: true}
		if set[a2] != same {
			t.Fatalf("map lookup disagrees with ==")
		}
		// Rebuilding the history gives equal sets: nothing was mutated.
		for i := range hist {
			again, _ := build(ops1[:i])
			if again != hist[i] {
				t.Fatalf("set after %d ops changed from %v to %v", i, again, hist[i])
			}
		}
		if a1.Len() != len(m1) {
			t.Fatalf("Len() = %d, model has %d", a1.Len(), len(m1))
		}
		keys := slices.Sorted(func(yield func(int) bool) {
			for k := range m1 {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			switch k {
			case 0:
				if v, ok := attributes.Get(a1, keyA); !ok || v != m1[0] {
					t.Fatalf("Get(keyA) = %v, %v; model %v", v, ok, m1[0])
				}
			case 2:
				if v, ok := attributes.Get(a1, keyC); !ok || v != m1[2] {
					t.Fatalf("Get(keyC) = %v, %v; model %v", v, ok, m1[2])
				}
			}
		}
	})
}
