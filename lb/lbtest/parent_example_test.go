package lbtest_test

import (
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/priority"
)

// A test of a parent policy, here priority_experimental (yours the same
// way): its children are script children whose states the test sets, found
// by the ids of their configs. The parent is built with the Parent's
// registry, so that its children's policy lists are parsed there and the
// test shares nothing with others (it may call t.Parallel). In a real
// test, pass the *testing.T instead of the ExampleTB.
func ExampleParent() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	p := lbtest.NewParent(t)
	p.Build(priority.NewBuilder())
	cfg := p.ParseConfig(priority.Name, `{"children": {
		"p0": {"config": [{"test_script": {"id": "p0"}}]},
		"p1": {"config": [{"test_script": {"id": "p1", "subConn": true}}]}},
		"priorities": ["p0", "p1"]}`)
	if err := p.UpdateAddresses(cfg); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("children built:", len(p.Scripts.All()))

	// p0 reports nothing: 10 s later, the failover timer starts p1.
	p.Advance(10*time.Second - time.Nanosecond)
	fmt.Println("at 10s-1ns:", len(p.Scripts.All()))
	p.Advance(time.Nanosecond)
	fmt.Println("at 10s:", len(p.Scripts.All()))

	p.Report("p1", lb.Ready, "p1-up")
	p.WantPicker(lb.Ready, "p1-up") // fails the test otherwise
	fmt.Println("published:", p.State().ConnectivityState, lbtest.PickerToken(p.State().Picker))

	// p0 becomes READY: priority switches back to it.
	p.Report("p0", lb.Ready, "p0-up")
	fmt.Println("published:", p.State().ConnectivityState, lbtest.PickerToken(p.State().Picker))
	// Output:
	// children built: 1
	// at 10s-1ns: 1
	// at 10s: 2
	// published: READY p1-up
	// published: READY p0-up
}
