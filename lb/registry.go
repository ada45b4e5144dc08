package lb

import (
	"maps"
	"slices"
	"sync"
)

// registry maps a policy name to its builder. It is lbkit's one piece of
// process-wide mutable state: written by Register, normally from init
// functions, and read when configs are parsed.
var registry = struct {
	sync.RWMutex
	m map[string]Builder
}{m: make(map[string]Builder)}

// Register makes b the builder for the policy named b.Name(), replacing any
// builder registered before under that name. Names are case-sensitive, as
// in gRPC service configs. Register is meant to be called from init
// functions.
func Register(b Builder) {
	registry.Lock()
	defer registry.Unlock()
	registry.m[b.Name()] = b
}

// Get returns the builder registered under name, or nil.
func Get(name string) Builder {
	registry.RLock()
	defer registry.RUnlock()
	return registry.m[name]
}

// Registered returns the names of every registered policy, sorted.
func Registered() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Sorted(maps.Keys(registry.m))
}
