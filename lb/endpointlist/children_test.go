package endpointlist_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	_ "github.com/lbkit/lbkit/lb/leastrequest"
	_ "github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
	_ "github.com/lbkit/lbkit/lb/roundrobin"
	_ "github.com/lbkit/lbkit/lb/weightedtarget"
	_ "github.com/lbkit/lbkit/lb/wrr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPoliciesAsChildren: every policy built on endpointlist runs as the
// child of priority_experimental and of weighted_target_experimental, built
// from the registry by name with its config. Two picks with neither
// finished go to the two READY endpoints: round robin and weighted round
// robin (equal weights) rotate, and least_request (ten choices) avoids the
// endpoint the first pick counted, which shows that the parents' pickers
// return the child's results, Done included, unchanged.
func TestPoliciesAsChildren(t *testing.T) {
	parents := map[string]string{
		"priority_experimental":        `{"children": {"p0": {"config": [%s]}}, "priorities": ["p0"]}`,
		"weighted_target_experimental": `{"targets": {"p0": {"weight": 1, "childPolicy": [%s]}}}`,
	}
	children := map[string]string{
		"round_robin":                `{"round_robin": {}}`,
		"least_request_experimental": `{"least_request_experimental": {"choiceCount": 10}}`,
		"weighted_round_robin":       `{"weighted_round_robin": {}}`,
	}
	for parent, parentConfig := range parents {
		for child, childConfig := range children {
			t.Run(parent+"/"+child, func(t *testing.T) {
				h := lbtest.New(t)
				_, cfg := h.BuildPolicy(parent, fmt.Sprintf(parentConfig, childConfig))
				var as []resolver.Address
				for _, a := range []string{"a", "b"} {
					as = append(as, hierarchy.Set(resolver.Address{Addr: a}, []string{"p0"}))
				}
				if err := h.UpdateAddresses(cfg, as...); err != nil {
					t.Fatal(err)
				}
				h.SubConn(0).Ready()
				h.SubConn(1).Ready()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard only
				defer cancel()
				p, err := h.CC.WaitForPicker(ctx, func(p lb.Picker) error {
					seen := map[lb.SubConn]bool{}
					for range 2 {
						r, err := p.Pick(lb.PickInfo{Ctx: context.Background()})
						if err != nil {
							return err
						}
						seen[r.SubConn] = true
						if r.Done != nil {
							// Finished only after both picks: both are in flight
							// when the second is made.
							defer r.Done(lb.DoneInfo{})
						}
					}
					if len(seen) != 2 {
						return fmt.Errorf("two picks went to %d endpoint(s), want one on each", len(seen))
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%v (last picker %v)", err, p)
				}
			})
		}
	}
}
