// Package hierarchy attaches the hierarchical path of gRFC A56 ("Hierarchical
// Addresses", https://github.com/grpc/proposal/blob/master/A56-priority-lb-policy.md)
// to resolver addresses, and splits a flat address list among the children of
// a multi-child policy.
//
// # Paths
//
// A path is a list of child names, one per level of the policy tree, such as
// ["p0", "localityA"]. A multi-child policy ([Group]) sends each address to
// the child named by the first element and strips that element; when the last
// element is stripped the path attribute is removed, so a leaf policy sees a
// plain address.
//
// # Concurrency
//
// Every function is pure: safe for concurrent use, and none changes its
// arguments.
package hierarchy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/resolver"
)

// encodedPath is the attribute value: the elements, each preceded by its
// length as a uvarint. A string keeps the attribute comparable.
type encodedPath struct{ enc string }

var pathKey = attributes.NewKey[encodedPath]("lbkit/hierarchy.path")

// Set returns a copy of addr whose path is path. An empty path removes the
// attribute. addr is unchanged.
func Set(addr resolver.Address, path []string) resolver.Address {
	if len(path) == 0 {
		addr.Attributes = attributes.Without(addr.Attributes, pathKey)
		return addr
	}
	// One allocation: the encoding is written straight into the string.
	n := 0
	for _, p := range path {
		n += uvarintLen(len(p)) + len(p)
	}
	var b strings.Builder
	b.Grow(n)
	var lenBuf [binary.MaxVarintLen64]byte
	for _, p := range path {
		b.Write(binary.AppendUvarint(lenBuf[:0], uint64(len(p))))
		b.WriteString(p)
	}
	addr.Attributes = attributes.With(addr.Attributes, pathKey, encodedPath{enc: b.String()})
	return addr
}

// uvarintLen is the length of n's uvarint encoding.
func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// Get returns addr's path, and whether it has one. The returned slice is
// new; changing it does not change addr.
func Get(addr resolver.Address) ([]string, bool) {
	v, ok := attributes.Get(addr.Attributes, pathKey)
	if !ok {
		return nil, false
	}
	path, err := decode(v.enc)
	if err != nil {
		// Only Set writes this attribute, so this cannot happen; report
		// the address as having no path rather than a wrong one.
		return nil, false
	}
	return path, true
}

var errCorrupt = errors.New("hierarchy: corrupt path attribute")

func decode(enc string) ([]string, error) {
	var path []string
	for enc != "" {
		first, rest, err := splitFirst(enc)
		if err != nil {
			return nil, err
		}
		path = append(path, first)
		enc = rest
	}
	return path, nil
}

// splitFirst returns the first element of an encoded path and the encoding
// of the rest, both substrings of enc: no allocation.
func splitFirst(enc string) (first, rest string, err error) {
	var n uint64
	var w int
	for i := 0; i < len(enc) && i < binary.MaxVarintLen64; i++ {
		b := enc[i]
		n |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			w = i + 1
			break
		}
	}
	if w == 0 || n > uint64(len(enc)-w) {
		return "", "", errCorrupt
	}
	end := w + int(n)
	return enc[w:end], enc[end:], nil
}

// Groups is a flat address list split by the first path element.
type Groups struct {
	// Children maps a child name to its addresses, in their original
	// order, with the first path element stripped.
	Children map[string][]resolver.Address
	// Order lists the child names in order of first appearance.
	Order []string
	// Dropped counts the addresses that had no path and so went to no
	// child.
	Dropped int
}

// Group splits addrs by the first element of each address's path, stripping
// it, and keeps the order of addrs within each child. Addresses without a
// path go to no child and are counted in Dropped: callers log the count (see
// [Groups.Err]) rather than lose them silently.
func Group(addrs []resolver.Address) Groups {
	g := Groups{Children: make(map[string][]resolver.Address)}
	for _, a := range addrs {
		v, ok := attributes.Get(a.Attributes, pathKey)
		if !ok {
			g.Dropped++
			continue
		}
		name, rest, err := splitFirst(v.enc)
		if err != nil {
			g.Dropped++ // only Set writes the attribute: cannot happen
			continue
		}
		if rest == "" {
			a.Attributes = attributes.Without(a.Attributes, pathKey)
		} else {
			a.Attributes = attributes.With(a.Attributes, pathKey, encodedPath{enc: rest})
		}
		list, seen := g.Children[name]
		if !seen {
			g.Order = append(g.Order, name)
		}
		g.Children[name] = append(list, a)
	}
	return g
}

// Err returns nil when no address was dropped, else an error saying how many
// addresses had no hierarchy path, for the caller's log.
func (g Groups) Err() error {
	if g.Dropped == 0 {
		return nil
	}
	return fmt.Errorf("hierarchy: %d address(es) without a hierarchy path were dropped (set each one's path with hierarchy.Set)", g.Dropped)
}

// Degraded returns the [resolver.State.Degraded] reason of the states a
// parent sends its children after grouping: degraded, the parent's own,
// with [Groups.Err] added when addresses were dropped. A child that then
// fails for want of addresses says why ("resolver produced zero
// addresses: hierarchy: 2 address(es) without a hierarchy path were
// dropped ..."), not only that it has none.
func (g Groups) Degraded(degraded error) error {
	err := g.Err()
	switch {
	case err == nil:
		return degraded
	case degraded == nil:
		return err
	}
	return fmt.Errorf("%w; %w", degraded, err)
}
