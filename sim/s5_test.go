package sim

import (
	"testing"
)

// TestS5A58WeighsByCapacity: backends of 1x, 2x and 4x capacity that
// report their load (issue 26): weighted_round_robin, following gRFC A58
// (weight = qps / utilization), brings their utilizations to within 5% of
// each other (max/avg at most 1.05; Dropbox reports 1.01 to 1.05 for a
// controller of this kind), where round robin gives each a third and
// overloads the smallest. Utilization is the requests a backend took over
// the measured period per slot (equal service times). The whole scenario
// runs in a few hundredths of a second.
func TestS5A58WeighsByCapacity(t *testing.T) {
	rep := runScenario(t, "s5-capacity")
	slots := map[string]float64{"x1": 1, "x2": 2, "x4": 4}
	ratio := map[string]float64{}
	for _, p := range rep.Policies {
		var sum, most float64
		for _, b := range p.Backends {
			u := float64(b.Requests) / slots[b.Name]
			sum += u
			most = max(most, u)
		}
		ratio[p.Policy] = most / (sum / float64(len(p.Backends)))
		t.Logf("%s: max/avg utilization %.3f", p.Policy, ratio[p.Policy])
	}
	if r := ratio["weighted_round_robin (A58)"]; r > 1.05 {
		t.Errorf("A58 weights leave max/avg utilization at %.3f, want at most 1.05", r)
	}
	if r := ratio["round_robin"]; r < 1.5 {
		t.Errorf("round robin's max/avg utilization %.3f: the scenario no longer tells them apart", r)
	}
}
