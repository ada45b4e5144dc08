package ringhash

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

// Config is ring_hash_experimental's configuration, the JSON object
// {"minRingSize": n, "maxRingSize": n, "requestHashHeader": "name"} of
// gRFC A42 and A76.
//
// A Config returned by ParseConfig holds the effective values: absent sizes
// are the defaults and both sizes are lowered to the builder's cap. The
// zero Config, as an update may carry, means the defaults and no header.
type Config struct {
	// MinRingSize is the smallest ring the policy builds: the ring has the
	// fewest entries above it that give the lightest endpoint a whole
	// number of entries. JSON "minRingSize" (or "min_ring_size"), a proto3
	// JSON uint64 from 1 to [RingSizeLimit]; absent, null or 0:
	// [DefaultMinRingSize].
	MinRingSize uint64
	// MaxRingSize bounds the ring. JSON "maxRingSize" (or
	// "max_ring_size"), from 1 to [RingSizeLimit]; absent, null or 0:
	// [DefaultMaxRingSize]. It must not be below MinRingSize.
	MaxRingSize uint64
	// RequestHashHeader, when set, names the request header whose value
	// is hashed to place the request on the ring (gRFC A76), lower case.
	// A request without the header gets a random hash. When empty, the
	// hash is the one the request carries ([lb.PickInfo.Hash]), and a
	// request without one fails. JSON "requestHashHeader" (or
	// "request_hash_header"): a gRPC metadata key (letters, digits, '-',
	// '_', '.'; upper case is lowered) that does not end in "-bin".
	RequestHashHeader string
}

// sizes returns the effective ring sizes of c under cap.
func (c Config) sizes(limit uint64) (minSize, maxSize uint64) {
	minSize, maxSize = c.MinRingSize, c.MaxRingSize
	if minSize == 0 {
		minSize = DefaultMinRingSize
	}
	if maxSize == 0 {
		maxSize = DefaultMaxRingSize
	}
	return min(minSize, limit), min(maxSize, limit)
}

// readConfig reads a config object; limit is the builder's cap.
func readConfig(obj lb.ConfigObject, limit uint64) (Config, error) {
	var c Config
	var err error
	if c.MinRingSize, err = readSize(obj, "minRingSize", "min_ring_size"); err != nil {
		return Config{}, err
	}
	if c.MaxRingSize, err = readSize(obj, "maxRingSize", "max_ring_size"); err != nil {
		return Config{}, err
	}
	minSize, maxSize := c.sizes(RingSizeLimit)
	if minSize > maxSize {
		_, name, _ := obj.Raw("minRingSize", "min_ring_size")
		return Config{}, lb.ConfigErrorf(name, "must be <= maxRingSize (%d), got %d", maxSize, minSize)
	}
	c.MinRingSize, c.MaxRingSize = c.sizes(limit)
	if err := obj.Decode(&c.RequestHashHeader, "requestHashHeader", "request_hash_header"); err != nil {
		return Config{}, err
	}
	c.RequestHashHeader = strings.ToLower(c.RequestHashHeader)
	if err := validHeader(c.RequestHashHeader); err != nil {
		_, name, _ := obj.Raw("requestHashHeader", "request_hash_header")
		return Config{}, lb.PrefixConfigError(name, err)
	}
	return c, nil
}

// readSize reads one ring size: 0 when absent or null, else from 1 to
// RingSizeLimit.
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
// [Config] holding the effective values, and lists the fields it does not
// know ([lb.ConfigParser]). Empty input and null mean the defaults. An
// error is a [*lb.ConfigError] naming the offending field, such as
// `maxRingSize: must be <= 8388608, got 9000000`.
func (b Builder) ParseConfig(raw json.RawMessage) (lb.Config, []string, error) {
	return lb.ParseConfigWith(raw, func(obj lb.ConfigObject) (Config, error) {
		return readConfig(obj, b.cap())
	})
}
