package sim_test

import (
	"fmt"

	"github.com/lbkit/lbkit/sim"
)

// Two policies over four backends, one of which answers in 2 s for half
// the run: round robin keeps sending it its share, least_request mostly
// does not.
func ExampleRun() {
	s, err := sim.ParseScenario([]byte(`{
	  "name": "example", "seed": 1, "duration": "20s",
	  "policies": [
	    {"serviceConfig": {"loadBalancingConfig": [{"round_robin": {}}]}},
	    {"serviceConfig": {"loadBalancingConfig": [{"least_request_experimental": {}}]}}],
	  "clients": [{"rate": 200, "timeout": "1s"}],
	  "backends": [{"name": "b", "count": 4, "service": {"constant": "0.05s"}}],
	  "faults": [{"backend": "b0", "from": "10s", "slower": {"latency": "2s"}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := sim.Run(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range rep.Policies {
		fmt.Printf("%s: %.1f%% within 1 s, p50 %.0f ms\n", p.Policy, 100*p.SuccessRate, p.Latency.P50)
	}
	// Output:
	// round_robin: 87.3% within 1 s, p50 50 ms
	// least_request_experimental: 96.9% within 1 s, p50 50 ms
}
