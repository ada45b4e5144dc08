package lb

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Registry maps policy names to builders. A channel looks up the policies
// a service config names in one registry ([DefaultRegistry] unless it is
// given another), and parent policies parse their children's lists with
// one. Names are case-sensitive, as in gRPC service configs.
//
// A Registry is safe for concurrent use. Create it with [NewRegistry].
type Registry struct {
	mu sync.RWMutex
	m  map[string]Builder
}

// NewRegistry returns a registry holding builders, each under its Name.
func NewRegistry(builders ...Builder) *Registry {
	r := &Registry{m: make(map[string]Builder)}
	for i, b := range builders {
		if b == nil {
			panic(fmt.Sprintf("lb: NewRegistry: builder %d of %d is nil", i+1, len(builders)))
		}
		r.Register(b)
	}
	return r
}

// ParentBuilder is implemented by the builder of a policy whose config
// names child policies (priority, weighted_target, outlier_detection): a
// registry binds it when it is registered, so that the children's policy
// lists are parsed against the registry the parent was registered in. A
// channel given its own registry (conn.WithRegistry) therefore finds its
// policies at every depth of a config, not only at the top.
type ParentBuilder interface {
	Builder
	// InRegistry returns a builder like this one that parses its
	// children's policy lists against r. It must not modify the receiver:
	// one builder may be registered in several registries.
	InRegistry(r *Registry) Builder
}

// Register makes b the builder for the policy named b.Name(), replacing any
// builder registered before under that name. A [ParentBuilder] is
// registered as b.InRegistry(r).
func (r *Registry) Register(b Builder) {
	if b == nil {
		panic("lb: Register: nil Builder")
	}
	if p, ok := b.(ParentBuilder); ok {
		b = p.InRegistry(r)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[b.Name()] = b
}

// Get returns the builder registered under name, or nil.
func (r *Registry) Get(name string) Builder {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.m[name]
}

// Names returns the names of every registered policy, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.m))
}

// defaultRegistry is lbkit's one piece of process-wide mutable state:
// written by Register, normally from init functions.
var defaultRegistry = NewRegistry()

// DefaultRegistry returns the process-wide registry: the one [Register]
// writes, where the built-in policies register themselves, and the one a
// channel and the parent policies use unless given another.
func DefaultRegistry() *Registry { return defaultRegistry }

// Register registers b in [DefaultRegistry]. It is meant to be called from
// init functions.
func Register(b Builder) { defaultRegistry.Register(b) }

// Get returns the builder registered under name in [DefaultRegistry], or
// nil.
func Get(name string) Builder { return defaultRegistry.Get(name) }
