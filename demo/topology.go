package demo

import (
	"fmt"
	"net"
	"slices"

	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// Topology is what the traffic should look like: each backend's priority
// and, for priority 0's usable endpoints, the share of priority 0's
// requests it should serve.
type Topology struct {
	// PriorityOf maps a backend's name to its priority, "p0", "p1", ….
	PriorityOf map[string]string
	// Want maps a priority-0 backend's name to its expected share, a
	// fraction of 1.
	Want map[string]float64
}

// Learn reads a ClusterLoadAssignment (Envoy's JSON) and returns its
// topology: each endpoint's priority and the share each priority-0
// endpoint should get (locality weight share times endpoint weight share;
// a missing weight counts 1). An endpoint whose address s.NameOf does not
// name is named by its address and added to s.Backends.
func (s *Scenario) Learn(data []byte) (Topology, error) {
	cla, err := eds.Parse(data)
	if err != nil {
		return Topology{}, err
	}
	var n eds.Namer
	if _, err := n.State(cla); err != nil {
		return Topology{}, err
	}
	if s.NameOf == nil {
		s.NameOf = map[string]string{}
	}
	t := Topology{PriorityOf: map[string]string{}, Want: map[string]float64{}}
	var localityTotal float64
	for _, l := range cla.Endpoints {
		if l.Priority == 0 {
			localityTotal += float64(l.LoadBalancingWeight)
		}
	}
	for _, l := range cla.Endpoints {
		var endpointTotal float64
		for _, e := range l.LbEndpoints {
			if e.HealthStatus.Usable() {
				endpointTotal += float64(max(e.LoadBalancingWeight, 1))
			}
		}
		for _, e := range l.LbEndpoints {
			addr := net.JoinHostPort(e.Address, fmt.Sprint(e.Port))
			name := s.NameOf[addr]
			if name == "" {
				name = addr
				s.NameOf[addr] = addr
			}
			if !slices.Contains(s.Backends, name) {
				s.Backends = append(s.Backends, name)
			}
			t.PriorityOf[name] = fmt.Sprintf("p%d", l.Priority)
			if l.Priority == 0 && l.LoadBalancingWeight > 0 && e.HealthStatus.Usable() {
				t.Want[name] = float64(l.LoadBalancingWeight) / localityTotal * float64(max(e.LoadBalancingWeight, 1)) / endpointTotal
			}
		}
	}
	return t, nil
}
