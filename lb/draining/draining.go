// Package draining marks resolver addresses whose endpoint is draining: it
// is going away (an EDS endpoint with health_status DRAINING, a backend
// being stopped) and should get no new request while another endpoint can
// serve, but the requests it has in flight must finish.
//
// The mark is an address attribute that endpoint keys ignore
// ([endpointlist.Key] clears it), so an endpoint marked or unmarked keeps
// its SubConn and its connection. The leaf policies built on
// [endpointlist] (round_robin, least_request, weighted_round_robin) leave
// draining endpoints out of their pickers while at least one READY
// endpoint is not draining; when every READY endpoint is draining, they
// pick among those rather than fail; pick_first tries draining addresses
// last ([Last]). This follows Envoy, whose draining
// hosts are excluded from load balancing of new requests.
//
// # Concurrency
//
// Every function is pure and safe for concurrent use.
//
// [endpointlist]: https://pkg.go.dev/github.com/lbkit/lbkit/lb/endpointlist
// [endpointlist.Key]: https://pkg.go.dev/github.com/lbkit/lbkit/lb/endpointlist#Key
package draining

import (
	"slices"

	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/resolver"
)

type mark struct{}

var key = attributes.NewKey[mark]("lbkit/draining")

// Set returns a copy of addr marked as draining. addr is unchanged.
func Set(addr resolver.Address) resolver.Address {
	addr.Attributes = attributes.With(addr.Attributes, key, mark{})
	return addr
}

// Is reports whether addr is marked as draining.
func Is(addr resolver.Address) bool {
	_, ok := attributes.Get(addr.Attributes, key)
	return ok
}

// Last moves the draining addresses of addrs to its end, in place, keeping
// the order within each group, and returns addrs: the order in which
// pick_first tries them, so that a draining address is connected to only
// when no other one can be. It allocates only when some address is
// draining.
func Last(addrs []resolver.Address) []resolver.Address {
	first := slices.IndexFunc(addrs, Is)
	if first < 0 {
		return addrs
	}
	var marked []resolver.Address
	kept := addrs[:first]
	for _, a := range addrs[first:] {
		if Is(a) {
			marked = append(marked, a)
		} else {
			kept = append(kept, a)
		}
	}
	copy(addrs[len(kept):], marked)
	return addrs
}

// Clear returns a copy of addr without the mark, so that an address and
// its draining form compare equal. addr is unchanged.
func Clear(addr resolver.Address) resolver.Address {
	addr.Attributes = attributes.Without(addr.Attributes, key)
	return addr
}
