package childmanager

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
)

// Sync makes the children of m those that want names, as a parent whose
// config maps child names to values does in UpdateClientConnState: a child
// whose name want lacks is removed (logged at INFO as "<policy>: removing
// <kind>"), a missing one is made by add, and then update is called for
// each name of want in sorted order. The errors update returns come back
// joined, each naming its child ("<policy>: <kind> "name": ..."). Like
// every method of the manager, it runs on the parent's serializer.
func Sync[T, V any](m *Manager[T], logger *slog.Logger, policy, kind string, want map[string]V,
	add func(name string) *Child[T], update func(c *Child[T], v V) error) error {
	for _, c := range m.Children() {
		if _, ok := want[c.Name()]; !ok {
			logger.Info(policy+": removing "+kind, "child_name", c.Name())
			c.Remove()
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(want)) {
		c := m.Get(name)
		if c == nil {
			c = add(name)
		}
		if err := update(c, want[name]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s %q: %w", policy, kind, name, err))
		}
	}
	return errors.Join(errs...)
}

// ExitIdle passes the request to every child, in name order; children that
// are not IDLE ignore it.
func (m *Manager[T]) ExitIdle() {
	for _, c := range m.Children() {
		c.ExitIdle()
	}
}
