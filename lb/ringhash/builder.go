package ringhash

import (
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/attributes"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Name is the policy's name in loadBalancingConfig and in the [lb] registry,
// the name gRPC gives it.
const Name = "ring_hash_experimental"

func init() { lb.Register(Builder{}) }

// Builder builds ring_hash_experimental balancers and parses their config.
// The zero value is ready to use, with the cap [DefaultRingSizeCap]; it is
// what this package registers under [Name]. A Builder is immutable and
// safe for concurrent use.
type Builder struct {
	// ringSizeCap is the cap of [WithRingSizeCap]; 0 means the default.
	ringSizeCap uint64
}

var _ lb.ConfigParser = Builder{}

// WithRingSizeCap returns a builder whose configs' ring sizes are lowered
// to n: gRFC A42's client-side cap, which keeps a control plane from making
// a client build huge rings. n is clamped to 1..[RingSizeLimit]. Register
// the returned builder ([lb.Register]) to apply the cap to every channel
// that uses the registry. If no cap is set, it is [DefaultRingSizeCap]
// (4096), as in gRPC.
func (b Builder) WithRingSizeCap(n uint64) Builder {
	b.ringSizeCap = min(max(n, 1), RingSizeLimit)
	return b
}

// cap returns the builder's effective cap.
func (b Builder) cap() uint64 {
	if b.ringSizeCap == 0 {
		return DefaultRingSizeCap
	}
	return b.ringSizeCap
}

// Name returns [Name].
func (Builder) Name() string { return Name }

// Build returns a new ring_hash_experimental balancer reporting to cc. It
// accepts, as [lb.ClientConnState.BalancerConfig], a [Config], a *Config or
// nil (the defaults); sizes above the builder's cap are lowered to it.
// Build publishes nothing; the first UpdateClientConnState does.
func (b Builder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return newBalancer(cc, opts, b.cap())
}

// hashKeyAttr is the endpoint hash key attribute of gRFC A76.
var hashKeyAttr = attributes.NewKey[string]("lbkit/ringhash.hashKey")

// SetHashKey returns addr with its endpoint hash key set to key (gRFC A76):
// ring_hash places the endpoint on the ring by hashing key instead of its
// address, so an endpoint that keeps its key (a StatefulSet's pod name)
// keeps its place when its address changes. An empty key clears it.
func SetHashKey(addr resolver.Address, key string) resolver.Address {
	if key == "" {
		addr.Attributes = attributes.Without(addr.Attributes, hashKeyAttr)
		return addr
	}
	addr.Attributes = attributes.With(addr.Attributes, hashKeyAttr, key)
	return addr
}

// HashKey returns addr's endpoint hash key, or "" when it has none.
func HashKey(addr resolver.Address) string {
	k, _ := attributes.Get(addr.Attributes, hashKeyAttr)
	return k
}
