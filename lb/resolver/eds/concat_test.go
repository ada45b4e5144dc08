package eds

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/resolver"
)

// oneLocality is an assignment of one locality in priority prio with the
// given endpoints.
func oneLocality(cluster, zone string, prio uint32, addrs ...string) *ClusterLoadAssignment {
	le := LocalityLbEndpoints{Locality: Locality{Zone: zone}, LoadBalancingWeight: 1, Priority: prio}
	for _, a := range addrs {
		host, port, _ := strings.Cut(a, ":")
		p := uint32(0)
		for _, c := range port {
			p = p*10 + uint32(c-'0')
		}
		le.LbEndpoints = append(le.LbEndpoints, LbEndpoint{Address: host, Port: p})
	}
	return &ClusterLoadAssignment{ClusterName: cluster, Endpoints: []LocalityLbEndpoints{le}}
}

// paths returns each address with its hierarchy path.
func paths(st resolver.State) []string {
	var out []string
	for _, a := range st.Addresses {
		p, _ := hierarchy.Get(a)
		out = append(out, a.Addr+" "+strings.Join(p, ">"))
	}
	return out
}

// The priorities of the first cluster come first (gRFC A37), each child
// under its own cluster's xds_cluster_impl_experimental; the tree parses.
func TestConcatOrdersClustersAndWrapsEachPriority(t *testing.T) {
	limit := uint32(7)
	primary := &ClusterLoadAssignment{ClusterName: "p", Endpoints: []LocalityLbEndpoints{
		{Locality: Locality{Zone: "a"}, LoadBalancingWeight: 1, LbEndpoints: []LbEndpoint{{Address: "10.0.0.1", Port: 80}}},
		{Locality: Locality{Zone: "b"}, LoadBalancingWeight: 1, Priority: 1, LbEndpoints: []LbEndpoint{{Address: "10.0.0.2", Port: 80}}},
	}, DropOverloads: []DropOverload{{Category: "throttle", DropPercentage: FractionalPercent{Numerator: 10}}}}
	parts := []Part{
		{Cluster: "p", Namer: &Namer{}, Assignment: primary, Policies: Policies{MaxConcurrentRequests: &limit}, IgnoreReresolution: true},
		{Cluster: "s", Namer: &Namer{}, Assignment: Resolved("s", []resolver.Address{{Addr: "127.0.0.1:8080"}, {Addr: "127.0.0.1:8080"}, {Addr: "bad"}}), Policies: Policies{Endpoint: json.RawMessage(`[{"pick_first":{}}]`), Flat: true}},
	}
	conv, err := Concat(parts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.1:80 p/priority-0-0>/a/", "10.0.0.2:80 p/priority-1-0>/b/", "127.0.0.1:8080 s/priority-0-0"}
	if got := paths(conv.State); !slices.Equal(got, want) {
		t.Errorf("addresses %v, want %v", got, want)
	}
	sc := string(conv.State.ServiceConfig)
	for _, s := range []string{
		`"priorities":["p/priority-0-0","p/priority-1-0","s/priority-0-0"]`,
		`"p/priority-0-0":{"config":[{"xds_cluster_impl_experimental":{"cluster":"p","maxConcurrentRequests":7,"dropCategories":[{"category":"throttle","requestsPerMillion":100000}]`,
		`"ignoreReresolutionRequests":true`,
		`"s/priority-0-0":{"config":[{"xds_cluster_impl_experimental":{"cluster":"s","childPolicy":[{"pick_first":{}}]}}]}`,
	} {
		if !strings.Contains(sc, s) {
			t.Errorf("service config %s lacks %s", sc, s)
		}
	}
	if conv.State.Degraded != nil {
		t.Errorf("Degraded = %v", conv.State.Degraded)
	}
	var top struct {
		LoadBalancingConfig json.RawMessage `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal(conv.State.ServiceConfig, &top); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.ParsePolicyList(top.LoadBalancingConfig); err != nil {
		t.Errorf("the tree does not parse: %v", err)
	}
}

// A cluster without endpoints contributes no priority, so the priority
// policy goes on to the next; all empty gives Degraded naming each.
func TestConcatSkipsEmptyClusters(t *testing.T) {
	conv, err := Concat([]Part{
		{Cluster: "p", Namer: &Namer{}, Assignment: &ClusterLoadAssignment{ClusterName: "p"}},
		{Cluster: "s", Namer: &Namer{}, Assignment: oneLocality("s", "z", 0, "10.0.1.1:80")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(conv.State.ServiceConfig), `"priorities":["s/priority-0-0"]`) || conv.State.Degraded != nil {
		t.Errorf("service config %s, Degraded %v; want only s's priority", conv.State.ServiceConfig, conv.State.Degraded)
	}
	conv, err = Concat([]Part{{Cluster: "p", Namer: &Namer{}}, {Cluster: "s", Namer: &Namer{}, Assignment: &ClusterLoadAssignment{ClusterName: "s"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(conv.State.Addresses) != 0 || conv.State.Degraded == nil ||
		!strings.Contains(conv.State.Degraded.Error(), `cluster "p": no usable endpoint`) || !strings.Contains(conv.State.Degraded.Error(), `cluster "s": no usable endpoint`) {
		t.Errorf("all empty: %d addresses, Degraded %v", len(conv.State.Addresses), conv.State.Degraded)
	}
}

// An invalid part is an error naming its cluster, and no Namer moves.
func TestConcatErrorLeavesNamersUnchanged(t *testing.T) {
	a, b := &Namer{}, &Namer{}
	if _, err := Concat([]Part{{Cluster: "p", Namer: a, Assignment: oneLocality("p", "z", 0, "10.0.0.1:80")}, {Cluster: "s", Namer: b, Assignment: oneLocality("s", "z", 0, "10.0.0.1:0")}}); err == nil || !strings.Contains(err.Error(), `cluster "s"`) {
		t.Fatalf("err = %v, want one naming cluster s", err)
	}
	if len(a.prev) != 0 || len(b.prev) != 0 {
		t.Errorf("the Namers moved: %v, %v", a.prev, b.prev)
	}
	if _, err := Concat(nil); err == nil {
		t.Error("Concat(nil) succeeded")
	}
}
