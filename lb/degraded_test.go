package lb_test

import (
	"errors"
	"testing"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	_ "github.com/lbkit/lbkit/lb/leastrequest"
	_ "github.com/lbkit/lbkit/lb/pickfirst"
	_ "github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
	_ "github.com/lbkit/lbkit/lb/roundrobin"
	_ "github.com/lbkit/lbkit/lb/weightedtarget"
	_ "github.com/lbkit/lbkit/lb/wrr"
)

// A policy that fails because of its resolver state (no address, no
// priority, no target) names the state's Degraded reason in the error of
// every picker it publishes for that state, from the first one: the
// reason arrives with the state, never after it (issue 32).
func TestEmptyStateFailuresNameTheReason(t *testing.T) {
	why := errors.New("every endpoint of the cluster is UNHEALTHY")
	for _, tc := range []struct{ policy, config string }{
		{"pick_first", `{}`},
		{"round_robin", `{}`},
		{"least_request_experimental", `{}`},
		{"weighted_round_robin", `{}`},
		{"priority_experimental", `{"children":{},"priorities":[]}`},
		{"weighted_target_experimental", `{"targets":{}}`},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			h := lbtest.New(t)
			_, cfg := h.BuildPolicy(tc.policy, tc.config)
			n := len(h.CC.States.All())
			_ = h.UpdateClientConnState(lb.ClientConnState{
				ResolverState:  resolver.State{Degraded: why},
				BalancerConfig: cfg,
			})
			published := h.CC.States.All()[n:]
			if len(published) == 0 {
				t.Fatal("nothing published for the empty state")
			}
			for i, s := range published {
				_, err := s.Picker.Pick(lb.PickInfo{})
				if s.ConnectivityState != lb.TransientFailure || !errors.Is(err, why) || !errors.Is(err, lb.ErrTransientFailure) {
					t.Errorf("state %d of %d published: %v with pick error %v; want TRANSIENT_FAILURE naming %q", i+1, len(published), s.ConnectivityState, err, why)
				}
			}
		})
	}
}
