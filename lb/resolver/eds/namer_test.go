package eds

import (
	"slices"
	"strings"
	"testing"
)

// groups builds the priorities of an update from locality names, one
// string of space-separated names per priority.
func groups(prios ...string) [][]localityGroup {
	out := make([][]localityGroup, len(prios))
	for p, s := range prios {
		for _, name := range strings.Fields(s) {
			out[p] = append(out[p], localityGroup{name: name, weight: 1})
		}
	}
	return out
}

func TestNamerSequence(t *testing.T) {
	steps := []struct {
		what  string
		prios []string
		want  []string
	}{
		{"first update", []string{"A B", "C"}, []string{"priority-0-0", "priority-1-0"}},
		{"unchanged", []string{"A B", "C"}, []string{"priority-0-0", "priority-1-0"}},
		{"locality order does not matter", []string{"B A", "C"}, []string{"priority-0-0", "priority-1-0"}},
		{"swap", []string{"C", "A B"}, []string{"priority-1-0", "priority-0-0"}},
		{"swap back", []string{"A B", "C"}, []string{"priority-0-0", "priority-1-0"}},
		{"split: the first part keeps the name", []string{"A", "B", "C"}, []string{"priority-0-0", "priority-1-1", "priority-1-0"}},
		{"merge: the higher name wins", []string{"A B", "C"}, []string{"priority-0-0", "priority-1-0"}},
		{"new priority", []string{"A B", "C", "D"}, []string{"priority-0-0", "priority-1-0", "priority-2-0"}},
		{"removed priority: the rest keep their names", []string{"A B", "D"}, []string{"priority-0-0", "priority-2-0"}},
		{"A56: priority 0 emptied and refilled from priority 1", []string{"D", "E"}, []string{"priority-2-0", "priority-1-2"}},
		{"largest overlap wins", []string{"E D"}, []string{"priority-2-0"}},
		{"tie: the higher previous priority wins", []string{"X", "Y"}, []string{"priority-0-1", "priority-1-3"}},
		{"tie between two children sharing one locality each", []string{"X Y"}, []string{"priority-0-1"}},
		{"a locality gone for two updates gets a new name", []string{"A B"}, []string{"priority-0-2"}},
		{"same locality in two priorities", []string{"A", "A B"}, []string{"priority-0-2", "priority-1-4"}},
		{"empty update", nil, []string{}},
		{"after an empty update every name is new", []string{"A", "A B"}, []string{"priority-0-3", "priority-1-5"}},
	}
	var n Namer
	for _, s := range steps {
		got := n.assign(groups(s.prios...))
		if !slices.Equal(got, s.want) {
			t.Fatalf("%s: %q gave names %q, want %q", s.what, s.prios, got, s.want)
		}
		for i, name := range got {
			if slices.Index(got, name) != i {
				t.Fatalf("%s: name %q given twice in %q", s.what, name, got)
			}
		}
	}
}

// A rejected assignment leaves the names alone.
func TestNamerInvalidAssignmentChangesNothing(t *testing.T) {
	loc := func(zone string, prio uint32, addr string) LocalityLbEndpoints {
		return LocalityLbEndpoints{Locality: Locality{Zone: zone}, LoadBalancingWeight: 1, Priority: prio, LbEndpoints: []LbEndpoint{{Address: addr, Port: 80}}}
	}
	var n Namer
	first := &ClusterLoadAssignment{ClusterName: "c", Endpoints: []LocalityLbEndpoints{loc("a", 0, "10.0.0.1"), loc("b", 1, "10.0.0.2")}}
	if _, err := n.State(first); err != nil {
		t.Fatal(err)
	}
	bad := &ClusterLoadAssignment{ClusterName: "c", Endpoints: []LocalityLbEndpoints{loc("b", 0, "10.0.0.2"), loc("c", 2, "10.0.0.3")}}
	if _, err := n.State(bad); err == nil {
		t.Fatal("State accepted a priority gap")
	}
	if got := n.assign(groups("/a/", "/b/")); !slices.Equal(got, []string{"priority-0-0", "priority-1-0"}) {
		t.Errorf("after a rejected assignment the names are %q, want the first ones", got)
	}
}

func TestNamerClone(t *testing.T) {
	var n Namer
	n.assign(groups("A", "B"))
	saved := n.clone()
	n.assign(groups("C"))
	n = *saved
	if got := n.assign(groups("B", "A")); !slices.Equal(got, []string{"priority-1-0", "priority-0-0"}) {
		t.Errorf("restored namer gave %q", got)
	}
}

// A hand-built locality must be valid UTF-8, or its name in the config
// (which JSON encoding would repair) would not match the address paths.
func TestValidateRejectsInvalidUTF8Locality(t *testing.T) {
	cla := &ClusterLoadAssignment{ClusterName: "c", Endpoints: []LocalityLbEndpoints{{Locality: Locality{Zone: "\xff"}, LoadBalancingWeight: 1}}}
	err := cla.validate()
	if err == nil || err.Path != "endpoints[0].locality.zone" {
		t.Errorf("validate() = %v, want an error at endpoints[0].locality.zone", err)
	}
}
