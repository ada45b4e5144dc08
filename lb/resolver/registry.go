package resolver

import (
	"maps"
	"slices"
	"strings"
	"sync"
)

// registry maps a scheme to its builder. It is the only process-wide mutable
// state of this package; it is written by Register, normally from an init
// function, and read when a channel starts.
var registry = struct {
	sync.RWMutex
	m map[string]Builder
}{m: make(map[string]Builder)}

// Register makes b the builder for b.Scheme(), replacing any builder
// registered before for the same scheme. Schemes are case-insensitive.
// Register is meant to be called from init functions.
func Register(b Builder) {
	if b == nil {
		panic("resolver: Register: nil Builder")
	}
	registry.Lock()
	defer registry.Unlock()
	registry.m[strings.ToLower(b.Scheme())] = b
}

// Get returns the builder registered for scheme, or nil if there is none.
func Get(scheme string) Builder {
	registry.RLock()
	defer registry.RUnlock()
	return registry.m[strings.ToLower(scheme)]
}

// Schemes returns the registered schemes, sorted.
func Schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Sorted(maps.Keys(registry.m))
}
