package clusterimpl

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/lbkit/lbkit/lb"
)

// Name is the policy's name in loadBalancingConfig: grpc-go's name for the
// same job, with the fields of its config that lbkit implements.
const Name = "xds_cluster_impl_experimental"

// Million is the denominator of [DropCategory].RequestsPerMillion.
const Million = 1_000_000

// Config is the parsed config; the package documentation shows its JSON.
// A Config is immutable once parsed.
type Config struct {
	// Cluster names the cluster in errors and metric labels; it may be
	// empty.
	Cluster string
	// MaxConcurrentRequests, when not nil, caps the requests in flight;
	// nil means no limit.
	MaxConcurrentRequests *uint32
	// DropCategories are applied in order.
	DropCategories []DropCategory
	// ChildPolicy is the policy delegated to.
	ChildPolicy *lb.ParsedPolicy
}

// DropCategory is one category of drop_overloads.
type DropCategory struct {
	// Category is its name, not empty.
	Category string
	// RequestsPerMillion is its share of the requests that reach it, out
	// of [Million].
	RequestsPerMillion uint32
}

// ReadConfig reads a [*Config] from obj; the child policy list is parsed
// against reg (nil: [lb.DefaultRegistry]).
func (policy) ReadConfig(obj lb.ConfigObject, reg *lb.Registry) (lb.Config, error) {
	cfg := &Config{}
	if err := obj.Decode(&cfg.Cluster, "cluster"); err != nil {
		return nil, err
	}
	if raw, name, ok := obj.Raw("maxConcurrentRequests", "max_concurrent_requests"); ok && string(raw) != "null" {
		n, err := lb.ParseUint32(raw, 0)
		if err != nil {
			return nil, lb.PrefixConfigError(name, err)
		}
		cfg.MaxConcurrentRequests = &n
	}
	var drops []json.RawMessage
	if err := obj.Decode(&drops, "dropCategories", "drop_categories"); err != nil {
		return nil, err
	}
	for i, raw := range drops {
		path := "dropCategories[" + strconv.Itoa(i) + "]"
		d, err := readDrop(obj, path, raw)
		if err != nil {
			return nil, err
		}
		cfg.DropCategories = append(cfg.DropCategories, d)
	}
	if _, _, ok := obj.Raw("childPolicy", "child_policy"); !ok {
		return nil, &lb.ConfigError{Path: "childPolicy", Err: errors.New("required: the child policy to delegate to")}
	}
	var err error
	if cfg.ChildPolicy, err = obj.PolicyList(reg, "childPolicy", "child_policy"); err != nil {
		return nil, err
	}
	return cfg, nil
}

// readDrop reads one element of dropCategories, found at path.
func readDrop(obj lb.ConfigObject, path string, raw json.RawMessage) (DropCategory, error) {
	o, err := obj.ObjectAt(path, raw)
	if err != nil {
		return DropCategory{}, err
	}
	var d DropCategory
	if err := o.Decode(&d.Category, "category"); err != nil {
		return DropCategory{}, lb.PrefixConfigError(path, err)
	}
	if d.Category == "" {
		return DropCategory{}, lb.ConfigErrorf(lb.JoinPath(path, "category"), "required: a non-empty name")
	}
	r, name, _ := o.Raw("requestsPerMillion", "requests_per_million")
	if d.RequestsPerMillion, err = lb.ParseUint32(r, 0); err != nil {
		return DropCategory{}, lb.PrefixConfigError(lb.JoinPath(path, name), err)
	}
	if d.RequestsPerMillion > Million {
		return DropCategory{}, lb.ConfigErrorf(lb.JoinPath(path, name), "must be <= %d, got %d", Million, d.RequestsPerMillion)
	}
	return d, nil
}
