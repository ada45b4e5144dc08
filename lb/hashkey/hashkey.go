// Package hashkey attaches an endpoint hash key to resolver addresses, as
// gRFC A76 defines it: consistent-hashing policies (ring_hash_experimental,
// maglev_experimental) place an endpoint with a hash key by hashing the
// key instead of its address, so an endpoint that keeps its key (a
// StatefulSet pod's name) keeps its place when its address changes. The
// eds and xds resolvers set it from an endpoint's "envoy.lb" hash_key
// metadata; a resolver of your own may set it too.
//
// # Concurrency
//
// Every function is pure and safe for concurrent use.
package hashkey

import (
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/resolver"
)

type hashKey string

var key = attributes.NewKey[hashKey]("lbkit/hashkey")

// Set returns a copy of addr carrying hash key k; an empty k clears it.
// addr is unchanged.
func Set(addr resolver.Address, k string) resolver.Address {
	if k == "" {
		return Clear(addr)
	}
	addr.Attributes = attributes.With(addr.Attributes, key, hashKey(k))
	return addr
}

// Get returns addr's hash key, or "" when it has none.
func Get(addr resolver.Address) string {
	k, _ := attributes.Get(addr.Attributes, key)
	return string(k)
}

// Clear returns a copy of addr without a hash key. addr is unchanged.
func Clear(addr resolver.Address) resolver.Address {
	addr.Attributes = attributes.Without(addr.Attributes, key)
	return addr
}
