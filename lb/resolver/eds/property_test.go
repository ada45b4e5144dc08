package eds_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
	"github.com/lbkit/lbkit/lb/weight"
)

// genAssignment is a random valid assignment: the value Parse must return,
// and a JSON document spelling it with random but equivalent proto3 JSON
// choices (field name spelling, numbers as strings, enums as numbers,
// default values left out).
type genAssignment struct {
	cla  *eds.ClusterLoadAssignment
	json []byte
}

func (g genAssignment) String() string { return string(g.json) }

var allHealth = []eds.HealthStatus{eds.HealthUnknown, eds.HealthHealthy, eds.HealthUnhealthy, eds.HealthDraining, eds.HealthTimeout, eds.HealthDegraded}

func drawAssignment(t *rapid.T) genAssignment {
	cla := &eds.ClusterLoadAssignment{ClusterName: rapid.SampledFrom([]string{"c", "payments", "a/b%"}).Draw(t, "cluster")}
	nPrio := rapid.IntRange(1, 4).Draw(t, "priorities")
	nLoc := rapid.IntRange(nPrio, 7).Draw(t, "localities")
	prios := make([]uint32, nLoc)
	for i := range prios {
		if i < nPrio {
			prios[i] = uint32(i) // every priority has a locality
		} else {
			prios[i] = uint32(rapid.IntRange(0, nPrio-1).Draw(t, "priority"))
		}
	}
	prios = rapid.Permutation(prios).Draw(t, "order")
	seen := make(map[uint32]map[eds.Locality]bool)
	addrN := 0
	for i, p := range prios {
		l := eds.Locality{
			Region:  rapid.SampledFrom([]string{"", "us", "eu/west", "100%"}).Draw(t, "region"),
			Zone:    rapid.SampledFrom([]string{"", "z1", "z/2"}).Draw(t, "zone"),
			SubZone: rapid.SampledFrom([]string{"", "s"}).Draw(t, "sub_zone"),
		}
		if seen[p] == nil {
			seen[p] = make(map[eds.Locality]bool)
		}
		if seen[p][l] {
			l.SubZone = "dup-" + strconv.Itoa(i)
		}
		seen[p][l] = true
		le := eds.LocalityLbEndpoints{
			Locality:            l,
			Priority:            p,
			LoadBalancingWeight: rapid.OneOf(rapid.Just(uint32(0)), rapid.Uint32Range(1, 1000)).Draw(t, "locality_weight"),
		}
		for range rapid.IntRange(0, 4).Draw(t, "endpoints") {
			addrN++
			var host string
			switch rapid.IntRange(0, 2).Draw(t, "address_kind") {
			case 0:
				host = fmt.Sprintf("10.%d.%d.%d", addrN/65536, addrN/256%256, addrN%256)
			case 1:
				host = fmt.Sprintf("2001:db8::%x", addrN)
			default:
				host = fmt.Sprintf("h%d.example", addrN)
			}
			le.LbEndpoints = append(le.LbEndpoints, eds.LbEndpoint{
				Address:             host,
				Port:                rapid.Uint32Range(1, 65535).Draw(t, "port"),
				HealthStatus:        rapid.SampledFrom(allHealth).Draw(t, "health"),
				LoadBalancingWeight: rapid.OneOf(rapid.Just(uint32(0)), rapid.Uint32Range(1, 1000)).Draw(t, "endpoint_weight"),
			})
		}
		cla.Endpoints = append(cla.Endpoints, le)
	}
	return genAssignment{cla: cla, json: encode(t, cla)}
}

// encode spells cla in proto3 JSON with random equivalent choices.
func encode(t *rapid.T, cla *eds.ClusterLoadAssignment) []byte {
	name := func(snake, camel string) string {
		if rapid.Bool().Draw(t, "camel "+snake) {
			return camel
		}
		return snake
	}
	num := func(v uint32) any {
		if rapid.Bool().Draw(t, "as string") {
			return strconv.FormatUint(uint64(v), 10)
		}
		return v
	}
	top := map[string]any{name("cluster_name", "clusterName"): cla.ClusterName}
	var locs []any
	for _, le := range cla.Endpoints {
		loc := map[string]any{}
		l := map[string]any{"region": le.Locality.Region, "zone": le.Locality.Zone, name("sub_zone", "subZone"): le.Locality.SubZone}
		loc["locality"] = l
		if le.LoadBalancingWeight != 0 {
			loc[name("load_balancing_weight", "loadBalancingWeight")] = num(le.LoadBalancingWeight)
		}
		if le.Priority != 0 || rapid.Bool().Draw(t, "explicit priority 0") {
			loc["priority"] = num(le.Priority)
		}
		var eps []any
		for _, ep := range le.LbEndpoints {
			sa := map[string]any{"address": ep.Address, name("port_value", "portValue"): num(ep.Port)}
			e := map[string]any{"endpoint": map[string]any{"address": map[string]any{name("socket_address", "socketAddress"): sa}}}
			if ep.HealthStatus != eds.HealthUnknown || rapid.Bool().Draw(t, "explicit UNKNOWN") {
				var h any = ep.HealthStatus.String()
				if rapid.Bool().Draw(t, "health as number") {
					h = int(ep.HealthStatus)
				}
				e[name("health_status", "healthStatus")] = h
			}
			if ep.LoadBalancingWeight != 0 {
				e[name("load_balancing_weight", "loadBalancingWeight")] = num(ep.LoadBalancingWeight)
			}
			eps = append(eps, e)
		}
		loc[name("lb_endpoints", "lbEndpoints")] = eps
		locs = append(locs, loc)
	}
	top["endpoints"] = locs
	data, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wantLeaf is where an endpoint must end up.
type wantLeaf struct {
	prio     int // index into the generated priorities
	locality string
	weight   uint32
	draining bool // marked with package draining
}

// expect computes, independently of the package, the used endpoints and the
// targets (locality → weight) of each generated priority.
func expect(cla *eds.ClusterLoadAssignment) (map[string]wantLeaf, []map[string]uint32) {
	var maxPrio uint32
	for _, le := range cla.Endpoints {
		maxPrio = max(maxPrio, le.Priority)
	}
	byPrio := make([]map[string]uint32, maxPrio+1)
	for _, le := range cla.Endpoints {
		if le.LoadBalancingWeight == 0 || !slices.ContainsFunc(le.LbEndpoints, func(ep eds.LbEndpoint) bool { return ep.HealthStatus.Usable() }) {
			continue
		}
		if byPrio[le.Priority] == nil {
			byPrio[le.Priority] = map[string]uint32{}
		}
		byPrio[le.Priority][le.Locality.Name()] = le.LoadBalancingWeight
	}
	var targets []map[string]uint32
	index := make(map[uint32]int)
	for p, ts := range byPrio {
		if ts != nil {
			index[uint32(p)] = len(targets)
			targets = append(targets, ts)
		}
	}
	leaves := make(map[string]wantLeaf)
	for _, le := range cla.Endpoints {
		if le.LoadBalancingWeight == 0 {
			continue
		}
		// DRAINING endpoints stay, marked, beside a usable one of their
		// locality; a locality with none is left out whole.
		hasUsable := slices.ContainsFunc(le.LbEndpoints, func(ep eds.LbEndpoint) bool { return ep.HealthStatus.Usable() })
		for _, ep := range le.LbEndpoints {
			drain := ep.HealthStatus == eds.HealthDraining
			if ep.HealthStatus.Usable() || (drain && hasUsable) {
				leaves[net.JoinHostPort(ep.Address, strconv.FormatUint(uint64(ep.Port), 10))] = wantLeaf{index[le.Priority], le.Locality.Name(), max(ep.LoadBalancingWeight, 1), drain}
			}
		}
	}
	return leaves, targets
}

// generatedConfig is the service config's shape; decoding with
// DisallowUnknownFields checks that nothing else is there.
type generatedConfig struct {
	LoadBalancingConfig []map[string]struct {
		Children map[string]struct {
			Config []map[string]struct {
				Targets map[string]struct {
					Weight      uint32                       `json:"weight"`
					ChildPolicy []map[string]json.RawMessage `json:"childPolicy"`
				} `json:"targets"`
			} `json:"config"`
		} `json:"children"`
		Priorities []string `json:"priorities"`
	} `json:"loadBalancingConfig"`
}

// checkState checks st against the independent expectation for cla.
func checkState(t *rapid.T, cla *eds.ClusterLoadAssignment, st resolver.State) {
	leaves, targets := expect(cla)
	dec := json.NewDecoder(bytes.NewReader(st.ServiceConfig))
	dec.DisallowUnknownFields()
	var sc generatedConfig
	if err := dec.Decode(&sc); err != nil {
		t.Fatalf("service config %s: %v", st.ServiceConfig, err)
	}
	if len(sc.LoadBalancingConfig) != 1 || len(sc.LoadBalancingConfig[0]) != 1 {
		t.Fatalf("want one policy in loadBalancingConfig: %s", st.ServiceConfig)
	}
	pc, ok := sc.LoadBalancingConfig[0]["priority_experimental"]
	if !ok {
		t.Fatalf("want priority_experimental: %s", st.ServiceConfig)
	}
	if len(pc.Priorities) != len(targets) || len(pc.Children) != len(targets) {
		t.Fatalf("got %d priorities and %d children, want %d: %s", len(pc.Priorities), len(pc.Children), len(targets), st.ServiceConfig)
	}
	for p, name := range pc.Priorities {
		child, ok := pc.Children[name]
		if !ok {
			t.Fatalf("priorities[%d] %q names no child", p, name)
		}
		if len(child.Config) != 1 || len(child.Config[0]) != 1 {
			t.Fatalf("child %q: want one policy: %s", name, st.ServiceConfig)
		}
		wt, ok := child.Config[0]["weighted_target_experimental"]
		if !ok {
			t.Fatalf("child %q is not weighted_target_experimental", name)
		}
		if len(wt.Targets) != len(targets[p]) {
			t.Fatalf("child %q has %d targets, want %d", name, len(wt.Targets), len(targets[p]))
		}
		for loc, w := range targets[p] {
			tg, ok := wt.Targets[loc]
			if !ok || tg.Weight != w || w < 1 {
				t.Fatalf("child %q target %q = %+v (present %v), want weight %d", name, loc, tg, ok, w)
			}
			if len(tg.ChildPolicy) != 1 || len(tg.ChildPolicy[0]) != 1 || string(tg.ChildPolicy[0]["weighted_round_robin"]) != "{}" {
				t.Fatalf("child %q target %q childPolicy %v, want [{weighted_round_robin: {}}]", name, loc, tg.ChildPolicy)
			}
		}
	}
	got := make(map[string]bool)
	for _, a := range st.Addresses {
		want, ok := leaves[a.Addr]
		if !ok {
			t.Fatalf("address %s published, want only %v", a.Addr, leaves)
		}
		if got[a.Addr] {
			t.Fatalf("address %s published twice", a.Addr)
		}
		got[a.Addr] = true
		path, _ := hierarchy.Get(a)
		if !slices.Equal(path, []string{pc.Priorities[want.prio], want.locality}) {
			t.Fatalf("address %s path %q, want [%q %q]", a.Addr, path, pc.Priorities[want.prio], want.locality)
		}
		if w, ok := weight.Get(a); !ok || w != want.weight {
			t.Fatalf("address %s weight %d (set %v), want %d", a.Addr, w, ok, want.weight)
		}
		if draining.Is(a) != want.draining {
			t.Fatalf("address %s marked draining: %v, want %v", a.Addr, draining.Is(a), want.draining)
		}
	}
	if len(got) != len(leaves) {
		t.Fatalf("published %d addresses, want %d", len(got), len(leaves))
	}
}

func TestPropertyTree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawAssignment(t)
		cla, err := eds.Parse(g.json)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if fmt.Sprintf("%+v", cla) != fmt.Sprintf("%+v", g.cla) {
			t.Fatalf("Parse gave %+v, want %+v", cla, g.cla)
		}
		st, err := new(eds.Namer).State(cla)
		if err != nil {
			t.Fatalf("State: %v", err)
		}
		checkState(t, cla, st)
	})
}

// Localities that move between priorities as whole groups keep their child
// names; a group seen for the first time gets a name never used before.
func TestPropertyNamesFollowLocalities(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const groups = 5
		var n eds.Namer
		prevName := make(map[int]string) // group → child name in the previous state
		used := make(map[string]bool)
		for step := range rapid.IntRange(1, 6).Draw(t, "steps") {
			order := rapid.Permutation([]int{0, 1, 2, 3, 4}).Draw(t, "order")
			order = order[:rapid.IntRange(0, groups).Draw(t, "present")]
			cla := &eds.ClusterLoadAssignment{ClusterName: "c"}
			for p, g := range order {
				for k := range g + 1 { // group g has g+1 localities
					cla.Endpoints = append(cla.Endpoints, eds.LocalityLbEndpoints{
						Locality:            eds.Locality{Region: strconv.Itoa(g), Zone: strconv.Itoa(k)},
						LoadBalancingWeight: 1,
						Priority:            uint32(p),
						LbEndpoints:         []eds.LbEndpoint{{Address: fmt.Sprintf("10.0.%d.%d", g, k), Port: 80}},
					})
				}
			}
			st, err := n.State(cla)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			var sc generatedConfig
			if err := json.Unmarshal(st.ServiceConfig, &sc); err != nil {
				t.Fatal(err)
			}
			names := sc.LoadBalancingConfig[0]["priority_experimental"].Priorities
			cur := make(map[int]string)
			for p, g := range order {
				cur[g] = names[p]
				if old, ok := prevName[g]; ok {
					if names[p] != old {
						t.Fatalf("step %d: group %d moved to priority %d and was renamed %q → %q", step, g, p, old, names[p])
					}
				} else if used[names[p]] {
					t.Fatalf("step %d: new group %d got the old name %q", step, g, names[p])
				}
				used[names[p]] = true
			}
			prevName = cur
		}
	})
}
