package childmanager

import (
	"log/slog"

	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
)

// GroupAddresses splits a parent's addresses by their hierarchical path's
// first element ([hierarchy.Group]), the name of the child each goes to,
// and logs at WARN, prefixed with policy, the addresses that go nowhere:
// those without a path, and those whose path names a child the config does
// not have (known reports false). It is the first step of every parent
// that routes addresses by path (gRFC A56's "Hierarchical Addresses").
func GroupAddresses(logger *slog.Logger, policy string, addrs []resolver.Address, known func(name string) bool) hierarchy.Groups {
	groups := hierarchy.Group(addrs)
	if err := groups.Err(); err != nil {
		logger.Warn(policy+": addresses dropped", "error", err)
	}
	for _, name := range groups.Order {
		if !known(name) {
			logger.Warn(policy+": addresses dropped: their path names no child in the config",
				"child_name", name, "addresses", len(groups.Children[name]))
		}
	}
	return groups
}

// ChildState returns the resolver state a parent sends child name after
// [GroupAddresses]: the child's addresses, with the parent's service config
// and attributes, and the parent's Degraded reason plus the grouping's
// ([hierarchy.Groups.Degraded]).
func ChildState(groups hierarchy.Groups, name string, parent resolver.State) resolver.State {
	return resolver.State{
		Addresses:     groups.Children[name],
		ServiceConfig: parent.ServiceConfig,
		Attributes:    parent.Attributes,
		Degraded:      groups.Degraded(parent.Degraded),
	}
}

// Slots hands out small integers that stay a child's for its lifetime
// (an index into a picker's array of children's pickers), reusing freed
// ones. The zero Slots is ready to use; it is not safe for concurrent use
// (parents use it inside their serialized calls).
type Slots struct {
	free []int
	next int
}

// Take returns a free slot: a freed one if any, else the next new one.
func (s *Slots) Take() int {
	if n := len(s.free); n > 0 {
		slot := s.free[n-1]
		s.free = s.free[:n-1]
		return slot
	}
	s.next++
	return s.next - 1
}

// Free returns slot, which a child no longer holds, for reuse.
func (s *Slots) Free(slot int) { s.free = append(s.free, slot) }

// Len returns one more than the largest slot ever taken: the length of an
// array indexed by slot.
func (s *Slots) Len() int { return s.next }
