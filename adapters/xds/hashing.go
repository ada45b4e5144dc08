package xds

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"
	maglevv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	ring_hashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/consistenthash"
)

// The message names of the consistent-hashing policies (gRFC A52's typed
// configs).
var (
	ringHashType = typeName(&ring_hashv3.RingHash{})
	maglevType   = typeName(&maglevv3.Maglev{})
)

// A42: unset ring sizes are set explicitly, the maximum to Envoy's 8M, so
// that lbkit's client-side cap, not ring_hash's own default, bounds it.
const (
	xdsMinRingSize = consistenthash.DefaultMinRingSize
	xdsMaxRingSize = consistenthash.RingSizeLimit
)

// hashing is what both consistent-hashing policies take from
// consistent_hashing_lb_config.
type hashing struct {
	balance uint32
}

// consistentHashing reads a ConsistentHashingLbConfig, found at field:
// hash_balance_factor becomes hashBalanceFactor; use_hostname_for_hashing
// is refused (lbkit hashes an endpoint's address or its A76 hash_key, and
// hashing another key would send keys elsewhere than Envoy does).
func consistentHashing(useHostname bool, factor *wrapperspb.UInt32Value, field string) (hashing, *ResourceError) {
	if useHostname {
		return hashing{}, fieldErrorf(field+".use_hostname_for_hashing", "not supported (lbkit hashes an endpoint's address, or its envoy.lb hash_key metadata)")
	}
	return hashing{balance: factor.GetValue()}, nil
}

// config returns the JSON fields h adds to a policy's config.
func (h hashing) config() string {
	if h.balance == 0 {
		return ""
	}
	return `,"hashBalanceFactor":` + strconv.FormatUint(uint64(h.balance), 10)
}

// ringHashLeaf returns ring_hash_experimental's policy list for the given
// sizes (unset ones as A42 sets them), refusing a hash function other than
// XX_HASH (A42). The sizes are checked by lbkit's parser (at most 8M,
// minimum not above maximum) when the caller parses the list.
func ringHashLeaf(min, max *wrapperspb.UInt64Value, xxHash bool, hashFunctionField string, h hashing) (json.RawMessage, *ResourceError) {
	if !xxHash {
		return nil, fieldErrorf(hashFunctionField, "only XX_HASH is supported (gRFC A42)")
	}
	lo, hi := uint64(xdsMinRingSize), uint64(xdsMaxRingSize)
	if min != nil {
		lo = min.GetValue()
	}
	if max != nil {
		hi = max.GetValue()
	}
	return policyList(consistenthash.RingHashName, `{"minRingSize":`+strconv.FormatUint(lo, 10)+`,"maxRingSize":`+strconv.FormatUint(hi, 10)+h.config()+`}`), nil
}

// maglevLeaf returns maglev_experimental's policy list for table size
// (unset: Envoy's default), checked by lbkit's parser (a prime, at most
// 5,000,011).
func maglevLeaf(size *wrapperspb.UInt64Value, h hashing) json.RawMessage {
	n := uint64(consistenthash.DefaultMaglevTableSize)
	if size != nil {
		n = size.GetValue()
	}
	return policyList(consistenthash.MaglevName, `{"tableSize":`+strconv.FormatUint(n, 10)+h.config()+`}`)
}

// hashingFields are the proto fields, relative to where a policy's config
// was found, of the JSON fields of lbkit's consistent-hashing configs.
type hashingFields struct {
	min, max, tableSize, balance string
}

// check parses leaf with lbkit's parser, the one judge of a valid config,
// and returns its error at the proto field the JSON field came from, so
// the NACK names what the control plane wrote.
func (f hashingFields) check(leaf json.RawMessage) *ResourceError {
	_, err := lb.ParsePolicyList(leaf)
	if err == nil {
		return nil
	}
	var ce *lb.ConfigError
	if errors.As(err, &ce) {
		field := ce.Path[strings.LastIndexByte(ce.Path, '.')+1:]
		at := map[string]string{"minRingSize": f.min, "maxRingSize": f.max, "tableSize": f.tableSize, "hashBalanceFactor": f.balance}[field]
		if at != "" {
			return fieldErrorf(at, "%v", ce.Err)
		}
	}
	return fieldErrorf(f.min, "lbkit refuses the converted config %s: %v", leaf, err)
}

// legacyHashing converts lb_policy RING_HASH or MAGLEV with its lb_config
// and common_lb_config.consistent_hashing_lb_config. The policy takes all
// of a priority's endpoints, weighted by locality × endpoint weight
// (gRFC A42): no locality-picking layer.
func legacyHashing(c *clusterv3.Cluster) (chosenPolicy, *ResourceError) {
	ch := c.GetCommonLbConfig().GetConsistentHashingLbConfig()
	h, err := consistentHashing(ch.GetUseHostnameForHashing(), ch.GetHashBalanceFactor(), "common_lb_config.consistent_hashing_lb_config")
	if err != nil {
		return chosenPolicy{}, err
	}
	fields := hashingFields{
		min: "ring_hash_lb_config.minimum_ring_size", max: "ring_hash_lb_config.maximum_ring_size",
		tableSize: "maglev_lb_config.table_size", balance: "common_lb_config.consistent_hashing_lb_config.hash_balance_factor",
	}
	var chosen chosenPolicy
	if c.GetLbPolicy() == clusterv3.Cluster_MAGLEV {
		chosen.leaf = maglevLeaf(c.GetMaglevLbConfig().GetTableSize(), h)
	} else {
		rh := c.GetRingHashLbConfig()
		chosen.leaf, err = ringHashLeaf(rh.GetMinimumRingSize(), rh.GetMaximumRingSize(),
			rh.GetHashFunction() == clusterv3.Cluster_RingHashLbConfig_XX_HASH, "ring_hash_lb_config.hash_function", h)
		if err != nil {
			return chosenPolicy{}, err
		}
	}
	return chosen, fields.check(chosen.leaf)
}

// typedFields are hashingFields of a typed config found at at.
func typedFields(at string, ch *commonv3.ConsistentHashingLbConfig) hashingFields {
	balance := at + ".hash_balance_factor"
	if ch != nil {
		balance = at + ".consistent_hashing_lb_config.hash_balance_factor"
	}
	return hashingFields{min: at + ".minimum_ring_size", max: at + ".maximum_ring_size", tableSize: at + ".table_size", balance: balance}
}

// ringHashPolicy converts a RingHash typed config (gRFC A52, A42).
func ringHashPolicy(m *ring_hashv3.RingHash, at string) (chosenPolicy, *ResourceError) {
	//lint:ignore SA1019 a control plane may still send the deprecated fields, which Envoy honours
	useHostname, factor := m.GetUseHostnameForHashing(), m.GetHashBalanceFactor()
	h, err := typedHashing(m.GetConsistentHashingLbConfig(), useHostname, factor, at)
	if err != nil {
		return chosenPolicy{}, err
	}
	fn := m.GetHashFunction()
	leaf, err := ringHashLeaf(m.GetMinimumRingSize(), m.GetMaximumRingSize(),
		fn == ring_hashv3.RingHash_XX_HASH || fn == ring_hashv3.RingHash_DEFAULT_HASH, at+".hash_function", h)
	if err != nil {
		return chosenPolicy{}, err
	}
	return chosenPolicy{leaf: leaf}, typedFields(at, m.GetConsistentHashingLbConfig()).check(leaf)
}

// maglevPolicy converts a Maglev typed config.
func maglevPolicy(m *maglevv3.Maglev, at string) (chosenPolicy, *ResourceError) {
	h, err := typedHashing(m.GetConsistentHashingLbConfig(), false, nil, at)
	if err != nil {
		return chosenPolicy{}, err
	}
	leaf := maglevLeaf(m.GetTableSize(), h)
	return chosenPolicy{leaf: leaf}, typedFields(at, m.GetConsistentHashingLbConfig()).check(leaf)
}

// typedHashing reads a typed config's consistent_hashing_lb_config, or
// (RingHash) its deprecated use_hostname_for_hashing and
// hash_balance_factor when that is unset, as Envoy does.
func typedHashing(ch *commonv3.ConsistentHashingLbConfig, useHostname bool, factor *wrapperspb.UInt32Value, at string) (hashing, *ResourceError) {
	if ch != nil {
		return consistentHashing(ch.GetUseHostnameForHashing(), ch.GetHashBalanceFactor(), at+".consistent_hashing_lb_config")
	}
	return consistentHashing(useHostname, factor, at)
}
