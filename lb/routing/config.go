package routing

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/route"
)

// Config is the parsed config of an xds_routing_experimental balancer: a
// route configuration ([route.Config]'s JSON form) and the child policy of
// every cluster its routes name:
//
//	{
//	  "routeConfig": {"virtualHosts": [{"domains": ["*"], "routes": [
//	    {"match": {"prefix": "/", "headers": [{"name": "x-canary", "presentMatch": true}]},
//	     "route": {"cluster": "canary"}},
//	    {"match": {"prefix": "/"}, "route": {"weightedClusters": {"clusters": [
//	      {"name": "stable", "weight": 90}, {"name": "canary", "weight": 10}]}}}]}]},
//	  "clusters": {
//	    "stable": {"childPolicy": [{"round_robin": {}}]},
//	    "canary": {"childPolicy": [{"round_robin": {}}]}
//	  }
//	}
//
// Field names are case-sensitive ("child_policy" is accepted for
// "childPolicy"); unknown fields are ignored and listed. The parser
// rejects, naming the JSON path, everything [route.Compile] rejects (under
// "routeConfig"), and:
//   - a cluster a route names that "clusters" does not hold;
//   - a cluster of "clusters" no route names (gRFC A28: every action is
//     referred to by a route);
//   - a cluster whose child policy list is missing, empty or names no
//     registered policy, or whose chosen policy's config is invalid.
//
// A Config is immutable once parsed.
type Config struct {
	// Routes is the compiled route configuration.
	Routes *route.Table
	// Clusters maps each cluster's name, the first element of the
	// hierarchical path of its addresses, to its policy.
	Clusters map[string]*lb.ParsedPolicy
}

// ReadConfig reads a [*Config] from obj, parsing child policies against
// reg (nil: [lb.DefaultRegistry]); see [Config] for the format and the
// rules.
func (policy) ReadConfig(obj lb.ConfigObject, reg *lb.Registry) (lb.Config, error) {
	raw, _, _ := obj.Raw("routeConfig")
	ro, err := obj.ObjectAt("routeConfig", raw)
	if err != nil {
		return nil, err
	}
	rc, err := route.Read(ro)
	if err != nil {
		return nil, lb.PrefixConfigError("routeConfig", err)
	}
	tab, err := route.Compile(rc)
	if err != nil {
		return nil, lb.PrefixConfigError("routeConfig", err)
	}
	var clusters map[string]json.RawMessage
	if err := obj.Decode(&clusters, "clusters"); err != nil {
		return nil, err
	}
	cfg := &Config{Routes: tab, Clusters: make(map[string]*lb.ParsedPolicy, len(clusters))}
	named := map[string]bool{}
	for _, c := range tab.Clusters() {
		named[c] = true
		if _, ok := clusters[c]; !ok {
			return nil, lb.ConfigErrorf("clusters", "no entry for cluster %q, which %s names", c, namedBy(tab, c))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		at := lb.JoinPath("clusters", lb.KeyPath(name))
		if !named[name] {
			return nil, lb.ConfigErrorf(at, "no route names cluster %q", name)
		}
		co, err := obj.ObjectAt(at, clusters[name])
		if err != nil {
			return nil, err
		}
		p, err := co.PolicyList(reg, "childPolicy", "child_policy")
		if err != nil {
			return nil, lb.PrefixConfigError(at, err)
		}
		cfg.Clusters[name] = p
	}
	return cfg, nil
}

// namedBy returns the path of the first route that names cluster c.
func namedBy(tab *route.Table, c string) string {
	cfg := tab.Config()
	for i, vh := range cfg.VirtualHosts {
		for j, r := range vh.Routes {
			if slices.Contains(actionClusters(r.Action), c) {
				return "routeConfig.virtualHosts[" + strconv.Itoa(i) + "].routes[" + strconv.Itoa(j) + "]"
			}
		}
	}
	return "a route"
}

// actionClusters returns the clusters a (validated) action names.
func actionClusters(a *route.Action) []string {
	if a.WeightedClusters == nil {
		return []string{a.Cluster}
	}
	var names []string
	for _, c := range a.WeightedClusters.Clusters {
		names = append(names, c.Name)
	}
	return names
}

// validate checks what the balancer relies on, for a Config built by hand
// rather than parsed: a route table, and a policy for every cluster its
// routes name.
func (c *Config) validate() error {
	if c.Routes == nil {
		return errors.New("routing: invalid config: no route table")
	}
	for _, name := range c.Routes.Clusters() {
		if p := c.Clusters[name]; p == nil || p.Builder == nil {
			return fmt.Errorf("routing: invalid config: cluster %q, which a route names, has no policy", name)
		}
	}
	return nil
}
