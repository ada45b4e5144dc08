package eds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/hashkey"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weight"
)

// Policy names used in the generated service config.
const (
	priorityPolicy       = "priority_experimental"
	weightedTargetPolicy = "weighted_target_experimental"
	leafPolicy           = "weighted_round_robin"
	// outlierDetectionPolicy wraps a priority's child when Policies asks.
	outlierDetectionPolicy = "outlier_detection_experimental"
	// clusterImplPolicy sits above the priority policy when the
	// assignment drops requests or Policies caps them.
	clusterImplPolicy = "xds_cluster_impl_experimental"
)

// Namer converts ClusterLoadAssignments into resolver states and names the
// priority children so that the names stay stable from one assignment to
// the next, as gRFC A56's "LB Policy Configuration" section asks: a child
// keeps its name, and so its balancer and connections, when its localities
// move to another priority.
//
// The zero Namer is ready to use and has seen no assignment. Use one Namer
// per stream of assignments (per cluster); a Namer is not safe for
// concurrent use.
//
// # Naming
//
// A new name is "priority-<p>-<k>", where p is the priority (after empty
// priorities are dropped, see the package documentation) it was minted for
// and k counts the names this Namer minted for p before, from 0; so the
// first assignment of two priorities gets "priority-0-0" and
// "priority-1-0". A name never repeats within one Namer.
//
// For each priority of a new assignment, highest first, the Namer looks at
// the children of the previous successful [Namer.State] call that no
// higher priority has claimed yet, and reuses the name of the one sharing
// the most localities (by [Locality.Name]) with it; a tie goes to the
// child that had the higher priority. Only a priority sharing no locality
// with any unclaimed child gets a new name. So:
//
//   - localities moving together to another priority keep their name;
//   - two priorities that swap their localities swap their names;
//   - a priority split in two keeps its name for the part that comes first,
//     and the other part gets a new one;
//   - merged priorities take the name of the higher one;
//   - a priority emptied and refilled from the next one takes that one's
//     name, and the next one gets a new name (A56's example).
//
// Only the previous assignment counts: a locality that left and came back
// two assignments later gets a fresh name.
type Namer struct {
	prev []namedChild // the children of the last successful State, by priority
	next map[int]int  // next k to mint for each priority index
}

// namedChild is one priority child: its name and its localities' names.
type namedChild struct {
	name       string
	localities map[string]bool
}

// clone returns an independent copy of n, for undoing a State call.
func (n *Namer) clone() *Namer {
	c := &Namer{prev: make([]namedChild, len(n.prev)), next: maps.Clone(n.next)}
	for i, ch := range n.prev {
		c.prev[i] = namedChild{name: ch.name, localities: maps.Clone(ch.localities)}
	}
	return c
}

// State validates cla ([ClusterLoadAssignment.Validate]) and returns the
// resolver state for it: the usable endpoints, each carrying its hierarchy
// path and weight, and the service config of the
// priority_experimental → weighted_target_experimental →
// weighted_round_robin tree. The package documentation describes both. The
// names of the priority children follow the rules on [Namer]; an invalid
// cla leaves n unchanged.
func (n *Namer) State(cla *ClusterLoadAssignment) (resolver.State, error) {
	c, err := n.Convert(cla, Policies{})
	return c.State, err
}

// Policies chooses the policies of the generated tree below
// priority_experimental. The zero Policies gives the tree the package
// documentation describes.
type Policies struct {
	// Endpoint is the policy over each locality's endpoints (over each
	// priority's endpoints when Flat is set), as a JSON
	// loadBalancingConfig list such as
	// [{"least_request_experimental":{"choiceCount":3}}]. Empty means
	// [{"weighted_round_robin":{}}].
	Endpoint json.RawMessage
	// OutlierDetection, when not empty, is an
	// outlier_detection_experimental config object without its
	// childPolicy, such as {"interval":"10s"}. Each priority's child then
	// is outlier_detection_experimental over the weighted_target_experimental
	// of its localities (over the Endpoint policy when Flat is set), as
	// gRFC A50 places it.
	OutlierDetection json.RawMessage
	// Flat drops the locality-picking layer: the Endpoint policy becomes
	// each priority's child (under outlier_detection_experimental when
	// OutlierDetection is set), over all the priority's endpoints in
	// document order, and each address's hierarchy path is just [child
	// name]. Localities then do not shape the tree: each endpoint's weight
	// is multiplied by its locality's (gRFC A42: locality weight ×
	// endpoint weight, saturating at 2^32-1), for a policy that reads
	// weights (ring_hash, maglev); the same localities and endpoints are
	// left out as without Flat, and the child names follow the same rules
	// ([Namer]). This is the tree gRPC
	// builds for an endpoint-picking policy that xDS does not wrap in
	// WrrLocality (gRFC A52), such as a top-level PickFirst (gRFC A62).
	Flat bool
	// MaxConcurrentRequests, when not nil, caps the cluster's requests in
	// flight (a CDS cluster's circuit_breakers max_requests, gRFC A32).
	// The tree then has xds_cluster_impl_experimental (package
	// clusterimpl) above the priority policy with this
	// maxConcurrentRequests, as it has for an assignment with
	// drop_overloads; nil means no limit.
	MaxConcurrentRequests *uint32
}

// Conversion is what [Namer.Convert] makes of one assignment.
type Conversion struct {
	// State is the resolver state to publish.
	State resolver.State
	// LeftOut lists the localities left out of the tree, each with its
	// JSON path and reason, such as
	// `endpoints[2] (locality "r/z/", priority 0): no load_balancing_weight`.
	LeftOut []string
	// NotUsable counts the endpoints left out for their health_status.
	NotUsable int
}

// Convert is [Namer.State] with the policies p and a report of what the
// tree leaves out. A State without addresses carries the reason in
// [resolver.State.Degraded], naming the priorities and localities at
// fault, for the resolver to publish with it. The policies' JSON is placed in the service config as
// it is: the channel's config parsers validate it. An invalid cla, or a
// Policies whose OutlierDetection is not a JSON object, is an error and
// leaves n unchanged.
func (n *Namer) Convert(cla *ClusterLoadAssignment, p Policies) (Conversion, error) {
	st, d, err := n.stateAndDrops(cla, p)
	return conversion(st, d, err)
}

// conversion is Convert's result from stateAndDrops's.
func conversion(st resolver.State, d drops, err error) (Conversion, error) {
	if err != nil {
		return Conversion{}, fmt.Errorf("eds: %w", err)
	}
	if len(st.Addresses) == 0 {
		st.Degraded = d.emptyTree()
	}
	return Conversion{State: st, LeftOut: d.localities, NotUsable: d.unusable}, nil
}

// stateAndDrops is Convert's work, also returning what the tree leaves
// out; n is unchanged on error.
func (n *Namer) stateAndDrops(cla *ClusterLoadAssignment, p Policies) (resolver.State, drops, error) {
	if err := cla.validate(); err != nil {
		return resolver.State{}, drops{}, err
	}
	return n.stateOfValid(cla, p)
}

// stateOfValid is stateAndDrops for a cla that validate accepted.
func (n *Namer) stateOfValid(cla *ClusterLoadAssignment, p Policies) (resolver.State, drops, error) {
	saved := n.clone()
	cfg, addrs, dropped, err := n.buildValid(cla, p, "")
	if err != nil {
		return resolver.State{}, drops{}, err
	}
	sc, err := marshal(serviceConfig{LoadBalancingConfig: topOfTree(cla, p, cfg)})
	if err != nil {
		*n = *saved
		return resolver.State{}, drops{}, fmt.Errorf("encoding the service config: %w", err)
	}
	return resolver.State{Addresses: addrs, ServiceConfig: sc}, dropped, nil
}

// build returns the priority policy's config for cla with the policies p,
// its children named by n with prefix before each name, and the
// addresses with their hierarchy paths under those names; n is unchanged
// on error.
func (n *Namer) build(cla *ClusterLoadAssignment, p Policies, prefix string) (priorityConfig, []resolver.Address, drops, error) {
	if err := cla.validate(); err != nil {
		return priorityConfig{}, nil, drops{}, err
	}
	return n.buildValid(cla, p, prefix)
}

// buildValid is build for a cla that validate accepted.
func (n *Namer) buildValid(cla *ClusterLoadAssignment, p Policies, prefix string) (priorityConfig, []resolver.Address, drops, error) {
	leaf := p.Endpoint
	if len(leaf) == 0 {
		leaf = defaultLeaf
	}
	var od map[string]json.RawMessage
	if len(p.OutlierDetection) > 0 {
		if err := json.Unmarshal(p.OutlierDetection, &od); err != nil || od == nil {
			return priorityConfig{}, nil, drops{}, fmt.Errorf("Policies.OutlierDetection: not a JSON object: %s", p.OutlierDetection)
		}
		if _, ok := od["childPolicy"]; ok {
			return priorityConfig{}, nil, drops{}, errors.New("Policies.OutlierDetection: has a childPolicy; the tree supplies it")
		}
	}
	prios, dropped := buildTree(cla)
	saved := n.clone()
	names := n.assign(prios)
	for i := range names {
		names[i] = prefix + names[i]
	}

	cfg := priorityConfig{Children: make(map[string]priorityChild, len(prios)), Priorities: names}
	var addrs []resolver.Address
	for i, localities := range prios {
		var child any
		if p.Flat {
			child = leaf
			for _, l := range localities {
				for _, a := range l.addrs {
					addrs = append(addrs, hierarchy.Set(timesLocality(a, l.weight), []string{names[i]}))
				}
			}
		} else {
			targets := make(map[string]target, len(localities))
			for _, l := range localities {
				targets[l.name] = target{Weight: l.weight, ChildPolicy: leaf}
				for _, a := range l.addrs {
					addrs = append(addrs, hierarchy.Set(a, []string{names[i], l.name}))
				}
			}
			child = []map[string]weightedTargetConfig{{weightedTargetPolicy: {Targets: targets}}}
		}
		if od != nil {
			wrapped, err := marshal(child)
			if err != nil {
				*n = *saved
				return priorityConfig{}, nil, drops{}, fmt.Errorf("encoding the service config: %w", err)
			}
			withChild := maps.Clone(od)
			withChild["childPolicy"] = wrapped
			child = []map[string]map[string]json.RawMessage{{outlierDetectionPolicy: withChild}}
		}
		cfg.Children[names[i]] = priorityChild{Config: child}
	}
	return cfg, addrs, dropped, nil
}

// topOfTree returns the tree's loadBalancingConfig: the priority policy,
// under xds_cluster_impl_experimental when the assignment has drop
// categories or p caps the requests in flight.
func topOfTree(cla *ClusterLoadAssignment, p Policies, cfg priorityConfig) any {
	top := []map[string]priorityConfig{{priorityPolicy: cfg}}
	if len(cla.DropOverloads) == 0 && p.MaxConcurrentRequests == nil {
		return top
	}
	ci := clusterImplConfig{Cluster: cla.ClusterName, MaxConcurrentRequests: p.MaxConcurrentRequests, ChildPolicy: top}
	for _, d := range cla.DropOverloads {
		ci.DropCategories = append(ci.DropCategories, dropCategory{Category: d.Category, RequestsPerMillion: d.DropPercentage.PerMillion()})
	}
	return []map[string]clusterImplConfig{{clusterImplPolicy: ci}}
}

// defaultLeaf is the endpoint policy of the default tree.
var defaultLeaf = json.RawMessage(`[{"` + leafPolicy + `":{}}]`)

// drops is what [buildTree] leaves out of the tree, each entry naming its
// JSON path and the reason.
type drops struct {
	// localities lists the localities left out, such as
	// "endpoints[2] (locality \"r/z/\", priority 0): no load_balancing_weight".
	localities []string
	// priorities lists the priorities left without a locality, such as
	// "priority 0 has no locality with a load_balancing_weight and a usable endpoint".
	priorities []string
	// unusable counts the endpoints left out for their health_status.
	unusable int
}

// emptyTree returns why the tree is empty.
func (d drops) emptyTree() error {
	if len(d.priorities) == 0 {
		return errors.New("no usable endpoint: the assignment has no endpoints")
	}
	return fmt.Errorf("no usable endpoint: %s (%s)", strings.Join(d.priorities, "; "), strings.Join(d.localities, "; "))
}

// timesLocality returns a with its weight multiplied by its locality's,
// saturating at 2^32-1: in a flat tree the endpoint weight carries the
// locality's too, as gRFC A42 asks of ring_hash ("the endpoint weights will
// need to be adjusted by the locality weight").
func timesLocality(a resolver.Address, locality uint32) resolver.Address {
	w, _ := weight.Get(a)
	return weight.Set(a, uint32(min(uint64(w)*uint64(locality), math.MaxUint32)))
}

// localityGroup is one target of a weighted_target child.
type localityGroup struct {
	name   string
	weight uint32
	addrs  []resolver.Address // with their weight, without a path
}

// buildTree returns the localities of each non-empty priority, highest
// first: localities with a weight and at least one usable endpoint, in
// document order, each with its usable endpoints in document order; and
// what it left out.
func buildTree(cla *ClusterLoadAssignment) ([][]localityGroup, drops) {
	var byPrio [][]localityGroup
	var d drops
	last := -1
	for i, le := range cla.Endpoints {
		last = max(last, int(le.Priority))
		var addrs []resolver.Address
		usable := 0
		for _, ep := range le.LbEndpoints {
			addr := hashkey.Set(weight.Set(resolver.Address{Addr: ep.hostPort()}, max(ep.LoadBalancingWeight, 1)), ep.HashKey)
			switch {
			case ep.HealthStatus.Usable():
				addrs = append(addrs, addr)
				usable++
			case ep.HealthStatus == HealthDraining:
				addrs = append(addrs, draining.Set(addr))
			default:
				d.unusable++
			}
		}
		if usable == 0 {
			// Only draining endpoints: the locality is left out, so that
			// its share goes to localities that can take new requests.
			d.unusable += len(addrs)
			addrs = nil
		}
		where := fmt.Sprintf("endpoints[%d] (locality %q, priority %d)", i, le.Locality.Name(), le.Priority)
		switch {
		case le.LoadBalancingWeight == 0:
			d.localities = append(d.localities, where+": no load_balancing_weight")
			continue
		case len(addrs) == 0:
			d.localities = append(d.localities, where+": no endpoint with health_status UNKNOWN or HEALTHY")
			continue
		}
		for int(le.Priority) >= len(byPrio) {
			byPrio = append(byPrio, nil)
		}
		byPrio[le.Priority] = append(byPrio[le.Priority], localityGroup{name: le.Locality.Name(), weight: le.LoadBalancingWeight, addrs: addrs})
	}
	prios := byPrio[:0]
	for p := 0; p <= last; p++ {
		if p < len(byPrio) && len(byPrio[p]) > 0 {
			prios = append(prios, byPrio[p])
		} else {
			d.priorities = append(d.priorities, fmt.Sprintf("priority %d has no locality with a load_balancing_weight and an endpoint UNKNOWN or HEALTHY", p))
		}
	}
	return prios, d
}

// assign returns a child name for each priority, following the rules on
// [Namer], and remembers them for the next call.
func (n *Namer) assign(prios [][]localityGroup) []string {
	names := make([]string, len(prios))
	claimed := make([]bool, len(n.prev))
	children := make([]namedChild, len(prios))
	for p, localities := range prios {
		set := make(map[string]bool, len(localities))
		for _, l := range localities {
			set[l.name] = true
		}
		best, bestOverlap := -1, 0
		for i, old := range n.prev {
			if claimed[i] {
				continue
			}
			overlap := 0
			for name := range set {
				if old.localities[name] {
					overlap++
				}
			}
			if overlap > bestOverlap {
				best, bestOverlap = i, overlap
			}
		}
		if best >= 0 {
			claimed[best] = true
			names[p] = n.prev[best].name
		} else {
			names[p] = n.mint(p)
		}
		children[p] = namedChild{name: names[p], localities: set}
	}
	n.prev = children
	return names
}

func (n *Namer) mint(p int) string {
	if n.next == nil {
		n.next = make(map[int]int)
	}
	k := n.next[p]
	n.next[p] = k + 1
	return "priority-" + strconv.Itoa(p) + "-" + strconv.Itoa(k)
}

// The service config, as JSON. Maps give sorted keys, so the encoding is
// deterministic.
type (
	serviceConfig struct {
		// LoadBalancingConfig is a []map[string]priorityConfig, or a
		// []map[string]clusterImplConfig over one.
		LoadBalancingConfig any `json:"loadBalancingConfig"`
	}
	clusterImplConfig struct {
		Cluster               string         `json:"cluster"`
		MaxConcurrentRequests *uint32        `json:"maxConcurrentRequests,omitempty"`
		DropCategories        []dropCategory `json:"dropCategories,omitempty"`
		ChildPolicy           any            `json:"childPolicy"`
	}
	dropCategory struct {
		Category           string `json:"category"`
		RequestsPerMillion uint32 `json:"requestsPerMillion"`
	}
	priorityConfig struct {
		Children   map[string]priorityChild `json:"children"`
		Priorities []string                 `json:"priorities"`
	}
	priorityChild struct {
		// Config is a []map[string]weightedTargetConfig, or the endpoint
		// policy's list when Policies.Flat is set, either of them
		// possibly wrapped in outlier_detection_experimental.
		Config any `json:"config"`
		// IgnoreReresolutionRequests is set on the children of an
		// aggregate cluster's EDS clusters ([Concat], gRFC A37).
		IgnoreReresolutionRequests bool `json:"ignoreReresolutionRequests,omitempty"`
	}
	weightedTargetConfig struct {
		Targets map[string]target `json:"targets"`
	}
	target struct {
		Weight      uint32          `json:"weight"`
		ChildPolicy json.RawMessage `json:"childPolicy"`
	}
)

// marshal encodes v compactly without escaping <, > and &.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
