package consistenthash

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/lbkit/lbkit/lb"
)

// The ring sizes of gRFC A42.
const (
	// DefaultMinRingSize is the minimum ring size of a config that sets
	// none.
	DefaultMinRingSize = 1024
	// DefaultMaxRingSize is the maximum ring size of a config that sets
	// none (A42's default, not Envoy's 8M).
	DefaultMaxRingSize = 4096
	// RingSizeLimit is the largest ring size a config may name; a larger
	// one is rejected, as A42 and Envoy reject it.
	RingSizeLimit = 8 * 1024 * 1024
	// DefaultRingSizeCap is the client-side cap on both ring sizes of
	// every config ([WithRingSizeCap]).
	DefaultRingSizeCap = 4096
)

// RingHashConfig is ring_hash_experimental's configuration, the JSON
// object {"minRingSize": n, "maxRingSize": n, "requestHashHeader": "name",
// "hashBalanceFactor": n, "entriesPerWeight": n} of gRFC A42 and A76
// (hashBalanceFactor is lbkit's, from Envoy; entriesPerWeight lbkit's).
//
// A RingHashConfig returned by ParseConfig holds the effective values:
// absent sizes are the defaults and both sizes are lowered to the
// builder's cap. The zero RingHashConfig, as an update may carry, means
// the defaults, no header and no load bound.
type RingHashConfig struct {
	// MinRingSize is the smallest ring the policy builds: the ring has the
	// fewest entries above it that give the lightest endpoint a whole
	// number of entries. JSON "minRingSize" (or "min_ring_size"), a proto3
	// JSON uint64 from 1 to [RingSizeLimit]; absent, null or 0:
	// [DefaultMinRingSize].
	MinRingSize uint64 `json:"minRingSize,omitempty"`
	// MaxRingSize bounds the ring. JSON "maxRingSize" (or
	// "max_ring_size"), from 1 to [RingSizeLimit]; absent, null or 0:
	// [DefaultMaxRingSize]. It must not be below MinRingSize.
	MaxRingSize uint64 `json:"maxRingSize,omitempty"`
	// RequestHashHeader, when set, names the request header whose value
	// is hashed to place the request on the ring (gRFC A76), lower case.
	// A request without the header gets a random hash. When empty, the
	// hash is the one the request carries ([lb.PickInfo.Hash]), and a
	// request without one fails. JSON "requestHashHeader" (or
	// "request_hash_header"): a gRPC metadata key (letters, digits, '-',
	// '_', '.'; upper case is lowered) that does not end in "-bin".
	RequestHashHeader string `json:"requestHashHeader,omitempty"`
	// HashBalanceFactor, when not 0, bounds each endpoint's requests in
	// flight (Envoy's hash_balance_factor; Mirrokni, Thorup and
	// Zadimoghaddam, "Consistent Hashing with Bounded Loads"): an endpoint
	// takes a request only while its requests in flight are below
	// ceil(ceil((all in flight + 1) × factor/100) × its weight's share);
	// a request whose endpoint is full goes on along the ring to the next
	// READY endpoint that is not. JSON "hashBalanceFactor" (or
	// "hash_balance_factor"), at least [MinHashBalanceFactor] (150 lets an
	// endpoint take 1.5 times its share); absent, null or 0: no bound.
	HashBalanceFactor uint32 `json:"hashBalanceFactor,omitempty"`
	// EntriesPerWeight, when not 0, sizes the ring by the endpoints'
	// weights (lbkit's, not A42's): each endpoint gets weight ×
	// EntriesPerWeight entries, whatever the other endpoints, so adding or
	// removing an endpoint moves only the keys of its own entries, and
	// changing a weight only those of the entries gained or lost. A42's
	// ring (the default) gives each endpoint about MinRingSize × its share
	// of the weight, so every endpoint's entries change with the number of
	// endpoints and a change moves other keys too (up to 1.6 times the
	// ideal share at 10 endpoints). While the weights sum to more than
	// MaxRingSize / EntriesPerWeight, the ring is A42's, sized by
	// MinRingSize and MaxRingSize, and the policy logs a warning when it
	// falls back (once, until the ring fits again). Either way a key keeps its endpoint
	// across clients with the same config, but a ring built by
	// EntriesPerWeight does not pick what grpc-go's ring_hash picks. JSON
	// "entriesPerWeight" (or "entries_per_weight"), a proto3 JSON uint64
	// from 1 to the configured maxRingSize; absent, null or 0: A42's ring.
	EntriesPerWeight uint64 `json:"entriesPerWeight,omitempty"`
}

// sizes returns the effective ring sizes of c under cap.
func (c RingHashConfig) sizes(limit uint64) (minSize, maxSize uint64) {
	minSize, maxSize = c.MinRingSize, c.MaxRingSize
	if minSize == 0 {
		minSize = DefaultMinRingSize
	}
	if maxSize == 0 {
		maxSize = DefaultMaxRingSize
	}
	return min(minSize, limit), min(maxSize, limit)
}

// readRingHash reads a ring_hash config object; limit is the builder's
// cap.
func readRingHash(obj lb.ConfigObject, limit uint64) (RingHashConfig, error) {
	var c RingHashConfig
	var err error
	if c.MinRingSize, err = readSize(obj, "minRingSize", "min_ring_size"); err != nil {
		return RingHashConfig{}, err
	}
	if c.MaxRingSize, err = readSize(obj, "maxRingSize", "max_ring_size"); err != nil {
		return RingHashConfig{}, err
	}
	minSize, maxSize := c.sizes(RingSizeLimit)
	if minSize > maxSize {
		// Name the field the config set: the minimum if it did, else the
		// maximum, below the default minimum.
		if _, name, ok := obj.Raw("minRingSize", "min_ring_size"); ok {
			return RingHashConfig{}, lb.ConfigErrorf(name, "must be <= maxRingSize (%d), got %d", maxSize, minSize)
		}
		_, name, _ := obj.Raw("maxRingSize", "max_ring_size")
		return RingHashConfig{}, lb.ConfigErrorf(name, "must be >= minRingSize (%d by default), got %d", minSize, maxSize)
	}
	if c.EntriesPerWeight, err = readSize(obj, "entriesPerWeight", "entries_per_weight"); err != nil {
		return RingHashConfig{}, err
	}
	if c.EntriesPerWeight > maxSize {
		_, name, _ := obj.Raw("entriesPerWeight", "entries_per_weight")
		return RingHashConfig{}, lb.ConfigErrorf(name, "must be <= maxRingSize (%d), got %d", maxSize, c.EntriesPerWeight)
	}
	c.MinRingSize, c.MaxRingSize = c.sizes(limit)
	if c.RequestHashHeader, c.HashBalanceFactor, err = readKeys(obj); err != nil {
		return RingHashConfig{}, err
	}
	return c, nil
}

// readKeys reads the fields both policies share: requestHashHeader and
// hashBalanceFactor.
func readKeys(obj lb.ConfigObject) (header string, factor uint32, err error) {
	if err := obj.Decode(&header, "requestHashHeader", "request_hash_header"); err != nil {
		return "", 0, err
	}
	header = strings.ToLower(header)
	if err := validHeader(header); err != nil {
		_, name, _ := obj.Raw("requestHashHeader", "request_hash_header")
		return "", 0, lb.PrefixConfigError(name, err)
	}
	v, name, ok := obj.Raw("hashBalanceFactor", "hash_balance_factor")
	if ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		if factor, err = lb.ParseUint32(v, MinHashBalanceFactor); err != nil {
			return "", 0, lb.PrefixConfigError(name, err)
		}
	}
	return header, factor, nil
}

// readSize reads one ring size (or entriesPerWeight): 0 when absent or
// null, else from 1 to RingSizeLimit.
func readSize(obj lb.ConfigObject, names ...string) (uint64, error) {
	v, name, ok := obj.Raw(names...)
	if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return 0, nil
	}
	n, err := lb.ParseUint32(v, 1)
	if err == nil && n > RingSizeLimit {
		err = lb.ConfigErrorf("", "must be <= %d, got %d", RingSizeLimit, n)
	}
	if err != nil {
		return 0, lb.PrefixConfigError(name, err)
	}
	return uint64(n), nil
}

// validHeader checks a lower-cased request hash header name by gRFC A76's
// rules: a valid gRPC metadata key that is not binary. Empty is valid (no
// header).
func validHeader(h string) error {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return lb.ConfigErrorf("", "%q is not a valid header name: byte %q at %d (want letters, digits, '-', '_' or '.')", h, c, i)
		}
	}
	if strings.HasSuffix(h, "-bin") {
		return lb.ConfigErrorf("", "%q is a binary header (it ends in \"-bin\"), which cannot be hashed", h)
	}
	return nil
}

// ParseConfig parses a ring_hash_experimental config object into a
// [RingHashConfig] holding the effective values, and lists the fields it
// does not know ([lb.ConfigParser]). Empty input and null mean the
// defaults. An error is a [*lb.ConfigError] naming the offending field,
// such as `maxRingSize: must be <= 8388608, got 9000000`.
func (b RingHashBuilder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (RingHashConfig, error) {
		return readRingHash(obj, b.cap())
	})
}

// MaglevConfig is maglev_experimental's configuration, the JSON object
// {"tableSize": 65537, "requestHashHeader": "name", "hashBalanceFactor": n},
// every field optional. The zero MaglevConfig means the defaults.
type MaglevConfig struct {
	// TableSize is the size of the lookup table, a prime: each endpoint
	// gets about TableSize × its share of the weight entries. JSON
	// "tableSize" (or "table_size"), a prime from 2 to
	// [MaxMaglevTableSize]; absent, null or 0: [DefaultMaglevTableSize],
	// Envoy's default.
	TableSize uint64 `json:"tableSize,omitempty"`
	// RequestHashHeader is as in [RingHashConfig].
	RequestHashHeader string `json:"requestHashHeader,omitempty"`
	// HashBalanceFactor is as in [RingHashConfig].
	HashBalanceFactor uint32 `json:"hashBalanceFactor,omitempty"`
}

// The table sizes of Maglev, as Envoy defines them.
const (
	// DefaultMaglevTableSize is the table size of a config that sets none.
	DefaultMaglevTableSize = 65537
	// MaxMaglevTableSize is the largest table size a config may set.
	MaxMaglevTableSize = 5000011
	// MinHashBalanceFactor is the smallest hashBalanceFactor a config may
	// set (100: no endpoint above the average).
	MinHashBalanceFactor = 100
)

// size returns the effective table size.
func (c MaglevConfig) size() uint64 {
	if c.TableSize == 0 {
		return DefaultMaglevTableSize
	}
	return c.TableSize
}

// readMaglev reads a maglev config object.
func readMaglev(obj lb.ConfigObject) (MaglevConfig, error) {
	var c MaglevConfig
	v, name, ok := obj.Raw("tableSize", "table_size")
	if ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		n, err := lb.ParseUint32(v, 2)
		switch {
		case err != nil:
		case n > MaxMaglevTableSize:
			err = lb.ConfigErrorf("", "must be <= %d, got %d", MaxMaglevTableSize, n)
		case !isPrime(n):
			err = lb.ConfigErrorf("", "must be a prime, got %d", n)
		}
		if err != nil {
			return MaglevConfig{}, lb.PrefixConfigError(name, err)
		}
		c.TableSize = uint64(n)
	}
	var err error
	if c.RequestHashHeader, c.HashBalanceFactor, err = readKeys(obj); err != nil {
		return MaglevConfig{}, err
	}
	return c, nil
}

// isPrime reports whether n is prime, by trial division (n is at most
// MaxMaglevTableSize: at most about 1,100 divisions).
func isPrime(n uint32) bool {
	if n < 2 {
		return false
	}
	for d := uint32(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// ParseConfig parses a maglev_experimental config object into a
// [MaglevConfig] and lists the fields it does not know
// ([lb.ConfigParser]). Empty input and null mean the defaults. An error is
// a [*lb.ConfigError] naming the offending field, such as
// `tableSize: must be a prime, got 65536`.
func (MaglevBuilder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, readMaglev)
}
