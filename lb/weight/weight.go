// Package weight attaches a per-endpoint load-balancing weight to resolver
// addresses, as the gRPC proposal "weighted_round_robin lb_policy for per
// endpoint load_balancing_weight from ClusterLoadAssignment response" asks:
// the LbEndpoint load_balancing_weight travels as an address attribute.
//
// # Concurrency
//
// Every function is pure and safe for concurrent use.
package weight

import (
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/resolver"
)

type endpointWeight uint32

var key = attributes.NewKey[endpointWeight]("lbkit/weight.endpoint")

// Set returns a copy of addr carrying weight w. addr is unchanged. Resolvers
// reject a weight of 0 at the source; policies that receive one treat it as
// 1 and log it.
func Set(addr resolver.Address, w uint32) resolver.Address {
	addr.Attributes = attributes.With(addr.Attributes, key, endpointWeight(w))
	return addr
}

// Get returns addr's weight and true, or 0 and false when addr has none.
func Get(addr resolver.Address) (uint32, bool) {
	w, ok := attributes.Get(addr.Attributes, key)
	return uint32(w), ok
}

// Clear returns a copy of addr without a weight, so that two addresses that
// differ only in weight compare equal. addr is unchanged.
func Clear(addr resolver.Address) resolver.Address {
	addr.Attributes = attributes.Without(addr.Attributes, key)
	return addr
}
