// Package attributes holds immutable, comparable key/value sets with typed
// keys, used to attach metadata (a hierarchy path, an endpoint weight) to
// resolver addresses.
//
// # Equality
//
// An [Attributes] value is comparable with ==: two sets are equal exactly when
// they hold the same keys with equal values, whatever order the values were
// added in. That makes an address carrying attributes usable as a map key.
//
// # Concurrency
//
// Attributes are immutable values; they may be shared between goroutines
// freely. [Attributes.With] returns a new set and never changes its receiver.
package attributes

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"
)

// Key identifies one attribute and the type of its value. Declare keys as
// package-level values with [NewKey]; two keys are the same key when their
// names and value types are the same.
//
// T must be a comparable, non-interface type, so that the equality of a set
// never depends on what an interface happens to hold.
type Key[T comparable] struct {
	name string
	typ  string // T's name, to order keys that share a name
}

// NewKey returns the key with the given name for values of type T.
//
// NewKey panics if T is an interface type: keys are declared once at package
// level, so this is a programming error found on the first run, and it keeps
// [Attributes] comparable at all times. Prefix names with your package path
// to avoid clashes.
func NewKey[T comparable](name string) Key[T] {
	if reflect.TypeFor[T]().Kind() == reflect.Interface {
		panic(fmt.Sprintf("attributes: key %q: value type %v is an interface; use a concrete comparable type", name, reflect.TypeFor[T]()))
	}
	return Key[T]{name: name, typ: reflect.TypeFor[T]().String()}
}

// Name returns the key's name.
func (k Key[T]) Name() string { return k.name }

// entry is one link of an immutable list kept sorted by (name, typ), the
// key's identity. It is a value, not a pointer, and next holds either nil
// or another entry value, so comparing two lists with == compares them
// element by element.
type entry struct {
	name string
	typ  string
	val  any // a T
	next any // nil or entry
}

// is reports whether e holds the value of the key (name, typ).
func (e entry) is(name, typ string) bool { return e.name == name && e.typ == typ }

// Attributes is an immutable set of typed values. The zero value is the empty
// set. Attributes are comparable with ==; see the package documentation.
type Attributes struct {
	head any // nil or entry
}

// Get returns the value stored under k in a, and whether it was present.
func Get[T comparable](a Attributes, k Key[T]) (T, bool) {
	for cur := a.head; cur != nil; {
		e := cur.(entry)
		if e.is(k.name, k.typ) {
			// Two types may print alike (a.T and b.T of packages both
			// named p): the value is k's only if it has k's type.
			v, ok := e.val.(T)
			return v, ok
		}
		cur = e.next
	}
	var zero T
	return zero, false
}

// With returns a copy of a in which k maps to v, replacing any earlier value
// of k. a itself is unchanged.
func With[T comparable](a Attributes, k Key[T], v T) Attributes {
	n := entry{name: k.name, typ: k.typ, val: v}
	return Attributes{head: insert(a.head, n)}
}

// Without returns a copy of a without k. a itself is unchanged.
func Without[T comparable](a Attributes, k Key[T]) Attributes {
	if _, ok := Get(a, k); !ok {
		return a
	}
	return Attributes{head: remove(a.head, k.name, k.typ)}
}

func compareEntries(a, b entry) int {
	return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.typ, b.typ))
}

// insert returns the list cur with n inserted in order, replacing an entry
// with the same key. The list is rebuilt up to the insertion point; the tail
// after it is shared.
func insert(cur any, n entry) any {
	if cur == nil {
		return n
	}
	e := cur.(entry)
	switch c := compareEntries(n, e); {
	case c < 0:
		n.next = e
		return n
	case c == 0:
		n.next = e.next
		return n
	default:
		e.next = insert(e.next, n)
		return e
	}
}

func remove(cur any, name, typ string) any {
	if cur == nil {
		return nil
	}
	e := cur.(entry)
	if e.is(name, typ) {
		return e.next
	}
	e.next = remove(e.next, name, typ)
	return e
}

// Len returns the number of attributes in a.
func (a Attributes) Len() int {
	n := 0
	for cur := a.head; cur != nil; cur = cur.(entry).next {
		n++
	}
	return n
}

// String returns the attributes as {name: value, ...} in key order.
func (a Attributes) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for cur := a.head; cur != nil; {
		e := cur.(entry)
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %v", e.name, e.val)
		cur = e.next
	}
	b.WriteByte('}')
	return b.String()
}
