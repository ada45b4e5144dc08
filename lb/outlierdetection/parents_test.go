package outlierdetection

import (
	"context"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/hierarchy"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/priority"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/weightedtarget"
)

// odChild is an outlier_detection config over the round-robin test leaf
// that ejects an address with more than half of at least 10 calls failed.
const odChild = `[{"outlier_detection_experimental": {"interval": "10s",
	"failurePercentageEjection": {"threshold": 50, "minimumHosts": 1, "requestVolume": 10},
	"childPolicy": [{"test_leaf": {}}]}}]`

// TestWorksAsAChildOfPriorityAndWeightedTarget runs outlier detection under
// both parent policies: requests that fail on one address eject it within
// one interval, and the parent's picker then skips it.
func TestWorksAsAChildOfPriorityAndWeightedTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config string
		path   string
	}{
		{priority.Name, `{"children": {"p0": {"config": ` + odChild + `}}, "priorities": ["p0"]}`, "p0"},
		{weightedtarget.Name, `{"targets": {"t0": {"weight": 1, "childPolicy": ` + odChild + `}}}`, "t0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := lbtest.New(t, lbtest.WithRegistry(testRegistry))
			_, cfg := h.BuildPolicy(tc.name, tc.config)
			var list []resolver.Address
			for _, a := range []string{"a", "b", "c"} {
				list = append(list, hierarchy.Set(resolver.Address{Addr: a}, []string{tc.path}))
			}
			if err := h.UpdateAddresses(cfg, list...); err != nil {
				t.Fatal(err)
			}
			for _, sc := range h.CC.SubConns() {
				sc.Ready()
			}
			picks := func(fail string) map[string]int { return pickAndReport(t, h, 30, fail) }
			if seen := picks("b"); seen["b"] != 10 {
				t.Fatalf("picks before ejection %v, want 10 each", seen)
			}
			h.Advance(10 * time.Second)
			if seen := picks(""); seen["b"] != 0 || seen["a"] != 15 || seen["c"] != 15 {
				t.Fatalf("picks after ejecting b: %v, want a and c only", seen)
			}
		})
	}
}

// pickAndReport makes n picks from the harness's last picker and reports
// each call's outcome: failed on the address fail, succeeded elsewhere. It
// returns the picks per address.
func pickAndReport(t *testing.T, h *lbtest.Harness, n int, fail string) map[string]int {
	t.Helper()
	seen := make(map[string]int)
	for range n {
		r, err := h.State().Picker.Pick(lb.PickInfo{Ctx: context.Background()})
		if err != nil {
			t.Fatalf("pick: %v", err)
		}
		addr := r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr
		seen[addr]++
		if r.Done != nil {
			var err error
			if addr == fail {
				err = errCallFailed
			}
			r.Done(lb.DoneInfo{Err: err})
		}
	}
	return seen
}
