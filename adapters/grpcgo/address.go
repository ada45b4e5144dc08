package grpcgo

import (
	"encoding/binary"

	"google.golang.org/grpc/attributes"
	grpcresolver "google.golang.org/grpc/resolver"

	lbattributes "github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// lbkitKey is the grpc-go attribute key under which the helpers store lbkit
// attributes (an lbattributes.Attributes, comparable with ==, as grpc-go's
// Attributes.Equal requires).
type lbkitKey struct{}

func lbkitAttributes(a *attributes.Attributes) (lbattributes.Attributes, bool) {
	v, ok := a.Value(lbkitKey{}).(lbattributes.Attributes)
	return v, ok
}

// withLBKit returns a with its lbkit attributes changed by f.
func withLBKit(a *attributes.Attributes, f func(resolver.Address) resolver.Address) *attributes.Attributes {
	cur, _ := lbkitAttributes(a)
	next := f(resolver.Address{Attributes: cur}).Attributes
	return a.WithValue(lbkitKey{}, next)
}

// SetWeight returns a copy of addr carrying the endpoint weight w, which
// lbkit's weighted_round_robin ([WeightedRoundRobinName]) spreads requests
// by. It sets addr.Attributes, which grpc-go keeps on the address whether a
// resolver publishes Addresses or Endpoints (BalancerAttributes, which
// grpc-go moves, is deprecated). The bridge passes the weight on with
// [weight.Set]. Resolvers should not publish a weight of 0 (policies treat
// it as 1).
func SetWeight(addr grpcresolver.Address, w uint32) grpcresolver.Address {
	addr.Attributes = withWeight(addr.Attributes, w)
	return addr
}

// SetHierarchyPath returns a copy of addr carrying the hierarchical path
// path (gRFC A56), by which lbkit's priority ([PriorityName]) and
// weighted_target ([WeightedTargetName]) send addresses to their children:
// ["p0"] sends the address to priority child "p0"; ["p0", "zoneA"] to
// target "zoneA" of a weighted_target policy that is child "p0". An empty
// path removes it. It sets addr.Attributes, as [SetWeight] does; the
// bridge passes the path on with [hierarchy.Set].
func SetHierarchyPath(addr grpcresolver.Address, path []string) grpcresolver.Address {
	addr.Attributes = withPath(addr.Attributes, path)
	return addr
}

// SetEndpointWeight is [SetWeight] for a resolver that publishes Endpoints:
// it sets ep.Attributes.
func SetEndpointWeight(ep grpcresolver.Endpoint, w uint32) grpcresolver.Endpoint {
	ep.Attributes = withWeight(ep.Attributes, w)
	return ep
}

// SetEndpointHierarchyPath is [SetHierarchyPath] for a resolver that
// publishes Endpoints: it sets ep.Attributes.
func SetEndpointHierarchyPath(ep grpcresolver.Endpoint, path []string) grpcresolver.Endpoint {
	ep.Attributes = withPath(ep.Attributes, path)
	return ep
}

// withWeight returns attrs with the lbkit weight w.
func withWeight(attrs *attributes.Attributes, w uint32) *attributes.Attributes {
	return withLBKit(attrs, func(a resolver.Address) resolver.Address { return weight.Set(a, w) })
}

// withPath returns attrs with the lbkit hierarchy path path.
func withPath(attrs *attributes.Attributes, path []string) *attributes.Attributes {
	return withLBKit(attrs, func(a resolver.Address) resolver.Address { return hierarchy.Set(a, path) })
}

// endpointRest is the lbkit attribute that tells apart endpoints with more
// than one address: the addresses after the first, encoded.
type endpointRest struct{ enc string }

var restKey = lbattributes.NewKey[endpointRest]("lbkit/adapters/grpcgo.endpoint")

// endpointKey identifies a grpc-go endpoint by its addresses' Addr and
// ServerName. It is what survives of the lbkit address when it comes back
// to NewSubConn, whatever the policies did to its weight and path.
type endpointKey struct {
	addr, serverName string
	rest             string // encoded addresses after the first; empty for one
}

// convertState turns grpc-go's resolver state into lbkit's, one lbkit
// address per endpoint, and returns the grpc-go addresses of each.
func convertState(s grpcresolver.State) (resolver.State, map[endpointKey][]grpcresolver.Address) {
	eps := s.Endpoints
	if eps == nil {
		// grpc-go's channel fills Endpoints in; a parent policy might not.
		eps = make([]grpcresolver.Endpoint, len(s.Addresses))
		for i, a := range s.Addresses {
			eps[i] = grpcresolver.Endpoint{Addresses: []grpcresolver.Address{a}}
		}
	}
	out := make([]resolver.Address, 0, len(eps))
	m := make(map[endpointKey][]grpcresolver.Address, len(eps))
	for _, ep := range eps {
		if len(ep.Addresses) == 0 {
			continue
		}
		first := ep.Addresses[0]
		attrs, ok := lbkitAttributes(ep.Attributes)
		if !ok {
			attrs, _ = lbkitAttributes(first.Attributes)
		}
		k := endpointKey{addr: first.Addr, serverName: first.ServerName, rest: encodeRest(ep.Addresses[1:])}
		if k.rest != "" {
			attrs = lbattributes.With(attrs, restKey, endpointRest{enc: k.rest})
		}
		if _, dup := m[k]; !dup {
			m[k] = ep.Addresses
		}
		out = append(out, resolver.Address{Addr: first.Addr, ServerName: first.ServerName, Attributes: attrs})
	}
	return resolver.State{Addresses: out}, m
}

// keyOf returns the key of the endpoint an lbkit address stands for.
func keyOf(a resolver.Address) endpointKey {
	rest, _ := lbattributes.Get(a.Attributes, restKey)
	return endpointKey{addr: a.Addr, serverName: a.ServerName, rest: rest.enc}
}

// rebuild returns grpc-go addresses with the key's Addr and ServerName, for
// an endpoint that is no longer in the last update.
func (k endpointKey) rebuild() []grpcresolver.Address {
	out := []grpcresolver.Address{{Addr: k.addr, ServerName: k.serverName}}
	for enc := k.rest; enc != ""; {
		var addr, name string
		var ok bool
		if addr, enc, ok = cutString(enc); !ok {
			break
		}
		if name, enc, ok = cutString(enc); !ok {
			break
		}
		out = append(out, grpcresolver.Address{Addr: addr, ServerName: name})
	}
	return out
}

// encodeRest encodes each address's Addr and ServerName, each preceded by
// its length as a uvarint.
func encodeRest(addrs []grpcresolver.Address) string {
	if len(addrs) == 0 {
		return ""
	}
	var buf []byte
	for _, a := range addrs {
		buf = binary.AppendUvarint(buf, uint64(len(a.Addr)))
		buf = append(buf, a.Addr...)
		buf = binary.AppendUvarint(buf, uint64(len(a.ServerName)))
		buf = append(buf, a.ServerName...)
	}
	return string(buf)
}

// cutString splits one length-prefixed string off enc.
func cutString(enc string) (s, rest string, ok bool) {
	n, w := binary.Uvarint([]byte(enc))
	if w <= 0 || n > uint64(len(enc)-w) {
		return "", "", false
	}
	end := w + int(n)
	return enc[w:end], enc[end:], true
}
