package outlierdetection_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/outlierdetection"
	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/roundrobin"
)

// Outlier detection over round_robin, given as a typed config and run on
// the lbtest harness: of three backends, one fails every request; at the
// next sweep the failure-percentage algorithm ejects it and round_robin
// only sees the other two.
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	p, err := lb.ParsePolicyConfig(outlierdetection.Policy{
		Detection: outlierdetection.Detection{
			Interval: time.Second,
			FailurePercentageEjection: &outlierdetection.FailurePercentageEjection{
				Threshold: 50, MinimumHosts: 3, RequestVolume: 10,
			},
			MaxEjectionPercent: 50,
		},
		ChildPolicy: roundrobin.Config{},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := lbtest.New(t)
	h.Build(p.Builder)
	_ = h.UpdateAddresses(p.Config,
		resolver.Address{Addr: "10.0.0.1:80"}, resolver.Address{Addr: "10.0.0.2:80"}, resolver.Address{Addr: "10.0.0.3:80"})
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	picks := func(n int, bad string) map[string]int {
		counts := map[string]int{}
		for range n {
			r, err := h.State().Picker.Pick(lb.PickInfo{Ctx: context.Background()})
			if err != nil {
				fmt.Println(err)
				return nil
			}
			addr := r.SubConn.(*lbtest.SubConn).Addresses()[0].Addr
			counts[addr]++
			if r.Done != nil {
				var err error
				if addr == bad {
					err = errors.New("503")
				}
				r.Done(lb.DoneInfo{Err: err})
			}
		}
		return counts
	}
	fmt.Println("before:", picks(30, "10.0.0.2:80"))
	h.Advance(time.Second) // the sweep
	fmt.Println("after: ", picks(30, "10.0.0.2:80"))
	// Output:
	// before: map[10.0.0.1:80:10 10.0.0.2:80:10 10.0.0.3:80:10]
	// after:  map[10.0.0.1:80:15 10.0.0.3:80:15]
}
