package consistenthash

import (
	"fmt"

	"github.com/lbkit/lbkit/lb"
)

// The policies' names in loadBalancingConfig and in the [lb] registry.
const (
	// RingHashName is the name gRPC gives ring_hash (gRFC A42).
	RingHashName = "ring_hash_experimental"
	// MaglevName is lbkit's name for Maglev (Envoy's MAGLEV).
	MaglevName = "maglev_experimental"
)

func init() {
	lb.Register(RingHashBuilder{})
	lb.Register(MaglevBuilder{})
}

// RingHashBuilder builds ring_hash_experimental balancers and parses their
// config. The zero value is ready to use, with the cap
// [DefaultRingSizeCap]; it is what this package registers under
// [RingHashName]. A RingHashBuilder is immutable and safe for concurrent
// use.
type RingHashBuilder struct {
	// ringSizeCap is the cap of [WithRingSizeCap]; 0 means the default.
	ringSizeCap uint64
}

var _ lb.ConfigParser = RingHashBuilder{}

// WithRingSizeCap returns a builder whose configs' ring sizes are lowered
// to n: gRFC A42's client-side cap, which keeps a control plane from making
// a client build huge rings. n is clamped to 1..[RingSizeLimit]. Register
// the returned builder ([lb.Register]) to apply the cap to every channel
// that uses the registry. If no cap is set, it is [DefaultRingSizeCap]
// (4096), as in gRPC.
func (b RingHashBuilder) WithRingSizeCap(n uint64) RingHashBuilder {
	b.ringSizeCap = min(max(n, 1), RingSizeLimit)
	return b
}

// cap returns the builder's effective cap.
func (b RingHashBuilder) cap() uint64 {
	if b.ringSizeCap == 0 {
		return DefaultRingSizeCap
	}
	return b.ringSizeCap
}

// Name returns [RingHashName].
func (RingHashBuilder) Name() string { return RingHashName }

// Build returns a new ring_hash_experimental balancer reporting to cc. It
// accepts, as [lb.ClientConnState.BalancerConfig], a [RingHashConfig], a
// *RingHashConfig or nil (the defaults); sizes above the builder's cap are
// lowered to it. Build publishes nothing; the first UpdateClientConnState
// does.
func (b RingHashBuilder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	limit := b.cap()
	return newBalancer(cc, opts, RingHashName, func(c lb.Config) (settings, error) {
		cfg, err := lb.ConfigOf[RingHashConfig](RingHashName, c)
		if err != nil {
			return settings{}, err
		}
		minSize, maxSize := cfg.sizes(limit)
		if minSize > maxSize {
			return settings{}, fmt.Errorf("%s: minRingSize %d above maxRingSize %d: %w", RingHashName, minSize, maxSize, lb.ErrBadResolverState)
		}
		return settings{
			header: cfg.RequestHashHeader, balance: cfg.HashBalanceFactor,
			table: func(nodes []ringNode) (table, error) {
				if perWeight := cfg.EntriesPerWeight; perWeight != 0 {
					return buildFixedRing(nodes, perWeight, minSize, maxSize)
				}
				return buildRing(nodes, minSize, maxSize), nil
			},
		}, nil
	})
}

// MaglevBuilder builds maglev_experimental balancers and parses their
// config: consistent hashing through Maglev's lookup table (Eisenbud et
// al., "Maglev: A Fast and Reliable Software Network Load Balancer",
// NSDI 2016), built as Envoy builds it. It shares ring_hash's connection
// handling, states and picker; a lookup is one modulo instead of a binary
// search. The zero value is ready to use; it is what this package
// registers under [MaglevName]. A MaglevBuilder is immutable and safe for
// concurrent use.
type MaglevBuilder struct{}

var _ lb.ConfigParser = MaglevBuilder{}

// Name returns [MaglevName].
func (MaglevBuilder) Name() string { return MaglevName }

// Build returns a new maglev_experimental balancer reporting to cc. It
// accepts, as [lb.ClientConnState.BalancerConfig], a [MaglevConfig], a
// *MaglevConfig or nil (the defaults). Build publishes nothing; the first
// UpdateClientConnState does.
func (MaglevBuilder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return newBalancer(cc, opts, MaglevName, func(c lb.Config) (settings, error) {
		cfg, err := lb.ConfigOf[MaglevConfig](MaglevName, c)
		if err != nil {
			return settings{}, err
		}
		size := cfg.size()
		if size > MaxMaglevTableSize || !isPrime(uint32(size)) {
			return settings{}, fmt.Errorf("%s: table size %d is not a prime up to %d: %w", MaglevName, size, MaxMaglevTableSize, lb.ErrBadResolverState)
		}
		return settings{
			header: cfg.RequestHashHeader, balance: cfg.HashBalanceFactor,
			table: func(nodes []ringNode) (table, error) { return buildMaglev(nodes, size), nil },
		}, nil
	})
}
