package peakewma_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/peakewma"
	"github.com/lbkit/lbkit/lb/resolver"
)

// The policy is named in a service config as
// {"peak_ewma_experimental": {"decayTime": "10s"}}. Here it runs on the
// lbtest harness, whose mock clock measures the requests: one endpoint
// answers in 10 ms, the other in 300 ms; after one request on each, every
// pick goes to the fast one (its cost grows with its requests in flight,
// so the slow one gets requests again once enough of them pile up).
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	h := lbtest.New(t)
	_, cfg := h.BuildPolicy(peakewma.Name, `{"decayTime": "10s"}`)
	h.UpdateAddresses(cfg, resolver.Address{Addr: "10.0.0.1:443"}, resolver.Address{Addr: "10.0.0.2:443"})
	for _, sc := range h.CC.SubConns() {
		sc.Ready()
	}
	st, _ := h.CC.LastState()
	info := lb.PickInfo{Ctx: context.Background()}
	fast, slow := h.CC.SubConns()[0], h.CC.SubConns()[1]
	// One request on each: 10 ms on the first, 300 ms on the second.
	a, _ := st.Picker.Pick(info)
	b, _ := st.Picker.Pick(info)
	if a.SubConn != fast {
		a, b = b, a
	}
	h.Advance(10 * time.Millisecond)
	a.Done(lb.DoneInfo{})
	h.Advance(290 * time.Millisecond)
	b.Done(lb.DoneInfo{})

	toFast := 0
	for range 10 {
		r, _ := st.Picker.Pick(info)
		if r.SubConn == fast {
			toFast++
		}
		r.Done(lb.DoneInfo{}) // at once: nothing piles up
	}
	fmt.Println("of 10 picks, to the fast endpoint:", toFast)
	// Requests that stay in flight raise the fast endpoint's cost: the
	// slow one gets a request once the fast one holds about 300/10.
	held := 0
	for {
		r, _ := st.Picker.Pick(info)
		if r.SubConn == slow {
			break
		}
		held++
	}
	fmt.Println("requests in flight on the fast endpoint before the slow one gets one:", held)
	// Output:
	// of 10 picks, to the fast endpoint: 10
	// requests in flight on the fast endpoint before the slow one gets one: 30
}

// A slowStartConfig ramps each endpoint that becomes READY over its window
// (package slowstart's object; aggression and minWeightPercent default to
// 1 and 10): while it ramps, picks divide its cost by its factor.
func ExampleConfig_slowStart() {
	cfg, _, err := peakewma.Builder{}.ParseConfig([]byte(`{"slowStartConfig": {"slowStartWindow": "30s"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", *cfg.(peakewma.Config).SlowStart)
	_, _, err = peakewma.Builder{}.ParseConfig([]byte(`{"slowStartConfig": {"slowStartWindow": "30s", "aggression": -1}}`))
	fmt.Println(err)
	// Output:
	// {SlowStartWindow:30s Aggression:1 MinWeightPercent:10}
	// slowStartConfig.aggression: must be positive and finite, got -1
}
