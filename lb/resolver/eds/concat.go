package eds

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/lbkit/lbkit/lb/resolver"
)

// Part is one cluster underlying an aggregate cluster, for [Concat]: its
// assignment, the policies of its priorities and the Namer that names
// them from one update to the next.
type Part struct {
	// Cluster is the cluster's name. It prefixes the names of its
	// priority children ("<Cluster>/priority-0-0") and is the "cluster" of
	// their xds_cluster_impl_experimental, which counts its requests in
	// flight and names it in errors and metrics.
	Cluster string
	// Namer names the cluster's priorities; one per cluster, kept from
	// one Concat to the next. It must not be nil.
	Namer *Namer
	// Assignment is the cluster's endpoints; one without endpoints
	// contributes no priority, so that the priority policy goes on to the
	// next cluster's.
	Assignment *ClusterLoadAssignment
	// Policies are the policies of the cluster's priorities:
	// MaxConcurrentRequests is its circuit breaker (nil: no limit).
	Policies Policies
	// IgnoreReresolution sets ignoreReresolutionRequests on the cluster's
	// priority children: gRFC A37 sets it for EDS clusters, so that their
	// failed connections do not make a DNS cluster resolve again.
	IgnoreReresolution bool
}

// Concat returns the tree of an aggregate cluster (gRFC A37): one
// priority_experimental whose priorities are those of each part in
// turn ("the priorities of the first cluster come first"), each child
// being xds_cluster_impl_experimental with its part's cluster, circuit
// breaker and drop categories over what [Namer.Convert] would place under
// the priority for that part alone. Addresses carry hierarchy paths under
// the prefixed child names.
//
// The Conversion's LeftOut entries are prefixed with their cluster;
// NotUsable sums the parts'. A State without addresses carries in
// Degraded why each part is empty. An invalid part is an error naming
// its cluster, and then every part's Namer is left unchanged. Concat
// with no part is an error.
func Concat(parts []Part) (Conversion, error) {
	if len(parts) == 0 {
		return Conversion{}, errors.New("eds: an aggregate cluster needs at least one cluster")
	}
	saved := make([]*Namer, len(parts))
	undo := func() {
		for i, s := range saved {
			if s != nil {
				*parts[i].Namer = *s
			}
		}
	}
	top := priorityConfig{Children: make(map[string]priorityChild)}
	var (
		conv    Conversion
		empties []string
	)
	for i, part := range parts {
		if part.Namer == nil {
			undo()
			return Conversion{}, fmt.Errorf("eds: cluster %q: no Namer", part.Cluster)
		}
		saved[i] = part.Namer.clone()
		cla := part.Assignment
		if cla == nil {
			cla = &ClusterLoadAssignment{ClusterName: part.Cluster}
		}
		cfg, addrs, d, err := part.Namer.build(cla, part.Policies, part.Cluster+"/")
		if err != nil {
			undo()
			return Conversion{}, fmt.Errorf("eds: cluster %q: %w", part.Cluster, err)
		}
		for _, name := range cfg.Priorities {
			if _, dup := top.Children[name]; dup {
				undo()
				return Conversion{}, fmt.Errorf("eds: cluster %q: priority child %q appears twice (clusters listed twice?)", part.Cluster, name)
			}
			ci := clusterImplConfig{Cluster: part.Cluster, MaxConcurrentRequests: part.Policies.MaxConcurrentRequests, ChildPolicy: cfg.Children[name].Config}
			for _, drop := range cla.DropOverloads {
				ci.DropCategories = append(ci.DropCategories, dropCategory{Category: drop.Category, RequestsPerMillion: drop.DropPercentage.PerMillion()})
			}
			top.Children[name] = priorityChild{Config: []map[string]clusterImplConfig{{clusterImplPolicy: ci}}, IgnoreReresolutionRequests: part.IgnoreReresolution}
			top.Priorities = append(top.Priorities, name)
		}
		conv.State.Addresses = append(conv.State.Addresses, addrs...)
		for _, l := range d.localities {
			conv.LeftOut = append(conv.LeftOut, "cluster "+strconv.Quote(part.Cluster)+": "+l)
		}
		conv.NotUsable += d.unusable
		if len(addrs) == 0 {
			empties = append(empties, "cluster "+strconv.Quote(part.Cluster)+": "+d.emptyTree().Error())
		}
	}
	if top.Priorities == nil {
		top.Priorities = []string{}
	}
	sc, err := marshal(serviceConfig{LoadBalancingConfig: []map[string]priorityConfig{{priorityPolicy: top}}})
	if err != nil {
		undo()
		return Conversion{}, fmt.Errorf("eds: encoding the service config: %w", err)
	}
	conv.State.ServiceConfig = sc
	if len(conv.State.Addresses) == 0 {
		conv.State.Degraded = errors.New(strings.Join(empties, "; "))
	}
	return conv, nil
}

// Resolved returns the assignment of a LOGICAL_DNS cluster (gRFC A37):
// the addresses resolved for it as one locality with empty fields, in
// priority 0, each address an endpoint of weight 1, in the order given.
// cluster names the assignment.
func Resolved(cluster string, addrs []resolver.Address) *ClusterLoadAssignment {
	cla := &ClusterLoadAssignment{ClusterName: cluster}
	if len(addrs) == 0 {
		return cla
	}
	le := LocalityLbEndpoints{LoadBalancingWeight: 1}
	seen := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		host, portText, err := net.SplitHostPort(a.Addr)
		if err != nil || seen[a.Addr] {
			continue
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || port == 0 {
			continue
		}
		seen[a.Addr] = true
		le.LbEndpoints = append(le.LbEndpoints, LbEndpoint{Address: host, Port: uint32(port), LoadBalancingWeight: 1})
	}
	cla.Endpoints = []LocalityLbEndpoints{le}
	return cla
}
