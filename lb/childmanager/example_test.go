package childmanager_test

import (
	"context"
	"fmt"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
	"github.com/lbkit/lbkit/lb/resolver"
)

// readyPolicy is a child policy that is READY as soon as it has an update.
type readyPolicy struct{ cc lb.ClientConn }

func (p *readyPolicy) UpdateClientConnState(lb.ClientConnState) error {
	p.cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: lb.NewQueuePicker()})
	return nil
}
func (p *readyPolicy) ResolverError(error) {}
func (p *readyPolicy) ExitIdle()           {}
func (p *readyPolicy) Close()              { fmt.Println("child balancer closed") }

type readyBuilder struct{}

func (readyBuilder) Name() string { return "example_ready" }
func (readyBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &readyPolicy{cc: cc}
}

// parentCC stands for the owner's own ClientConn.
type parentCC struct{}

func (parentCC) NewSubConn([]resolver.Address, lb.NewSubConnOptions) (lb.SubConn, error) {
	return nil, fmt.Errorf("not in this example")
}
func (parentCC) UpdateState(lb.State) {}
func (parentCC) ResolveNow()          {}
func (parentCC) Target() string       { return "example:///target" }

// An owner policy (here, inline code) keeps its own per-child data in
// Child.Data, builds a child with its first Update, hears its states through
// StateChanged, and retires it with Deactivate.
func Example() {
	mock := clock.NewMock()
	s := lb.NewSerializer(mock)
	defer s.Close()
	ctx := context.Background()
	opts := lb.BuildOptions{Clock: mock, Scheduler: s}

	type weight int // the owner's per-child data
	var c *childmanager.Child[weight]
	_ = s.Run(ctx, func() {
		m := childmanager.New(parentCC{}, opts, childmanager.Hooks[weight]{
			StateChanged: func(c *childmanager.Child[weight]) {
				fmt.Printf("%s is %v (weight %d)\n", c.Name(), c.State().ConnectivityState, c.Data)
			},
			Removed: func(c *childmanager.Child[weight]) { fmt.Println(c.Name(), "removed") },
		})
		c = m.Add("localityA")
		c.Data = 3
		fmt.Println("policy before Update:", c.Policy() == "")
		p := &lb.ParsedPolicy{Name: "example_ready", Builder: readyBuilder{}}
		_ = c.Update(p, resolver.State{})
		c.Deactivate()
	})
	// The deactivation timer runs on the tree's clock.
	mock.Add(childmanager.DefaultDeactivationDelay)
	_ = s.WaitIdle(ctx, mock.Now())
	fmt.Println("removed:", c.Removed())
	// Output:
	// policy before Update: true
	// localityA is READY (weight 3)
	// child balancer closed
	// localityA removed
	// removed: true
}
