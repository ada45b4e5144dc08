package lbtest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/lbtest"
	"github.com/lbkit/lbkit/lb/resolver"
)

// firstReady is a small custom policy under test: it connects to every
// address at once, picks the first READY one in address order, and, to show
// timers, gives up with TRANSIENT_FAILURE if nothing is READY 5 s after an
// update.
type firstReady struct {
	cc       lb.ClientConn
	opts     lb.BuildOptions
	subConns []lb.SubConn
	states   map[lb.SubConn]lb.ConnectivityState
	deadline lb.Timer
}

type firstReadyBuilder struct{}

func (firstReadyBuilder) Name() string { return "example_first_ready" }

func (firstReadyBuilder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return &firstReady{cc: cc, opts: opts.WithDefaults(), states: make(map[lb.SubConn]lb.ConnectivityState)}
}

func (b *firstReady) UpdateClientConnState(s lb.ClientConnState) error {
	for _, a := range s.ResolverState.Addresses {
		var sc lb.SubConn
		sc, err := b.cc.NewSubConn([]resolver.Address{a}, lb.NewSubConnOptions{
			StateListener: func(st lb.SubConnState) { b.states[sc] = st.ConnectivityState; b.publish() },
		})
		if err != nil {
			return err
		}
		b.subConns = append(b.subConns, sc)
		sc.Connect()
	}
	b.deadline = b.opts.Scheduler.AfterFunc(5*time.Second, func() {
		b.cc.UpdateState(lb.State{ConnectivityState: lb.TransientFailure,
			Picker: lb.NewErrPicker(lb.TransientFailureError(errors.New("nothing ready after 5s")))})
	})
	b.publish()
	return nil
}

func (b *firstReady) publish() {
	for _, sc := range b.subConns {
		if b.states[sc] == lb.Ready {
			b.deadline.Stop()
			b.cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: fixedPicker{sc}})
			return
		}
	}
	b.cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
}

func (b *firstReady) ResolverError(error) {}
func (b *firstReady) ExitIdle()           {}
func (b *firstReady) Close() {
	for _, sc := range b.subConns {
		sc.Shutdown()
	}
}

type fixedPicker struct{ sc lb.SubConn }

func (p fixedPicker) Pick(lb.PickInfo) (lb.PickResult, error) {
	return lb.PickResult{SubConn: p.sc}, nil
}

// A test of a custom policy: build it on the harness, feed addresses, drive
// SubConn states and the mock clock, and check what the policy published.
// In a real test, pass the *testing.T instead of the ExampleTB.
func Example() {
	t := &lbtest.ExampleTB{}
	defer t.Finish()

	h := lbtest.New(t)
	h.Build(firstReadyBuilder{})
	h.UpdateAddresses(nil, resolver.Address{Addr: "10.0.0.1:80"}, resolver.Address{Addr: "10.0.0.2:80"})

	scs := h.CC.SubConns()
	fmt.Println("SubConns:", len(scs), "connects:", h.CC.Connects.Pending())
	st, _ := h.CC.LastState()
	fmt.Println("state:", st.ConnectivityState)

	// Exactly at the 5 s deadline minus 1 ns nothing has happened...
	h.Advance(5*time.Second - time.Nanosecond)
	st, _ = h.CC.LastState()
	fmt.Println("at 5s-1ns:", st.ConnectivityState)
	// ...and 1 ns later the timer has fired and its callback has run.
	h.Advance(time.Nanosecond)
	st, _ = h.CC.LastState()
	fmt.Println("at 5s:", st.ConnectivityState)

	scs[1].Ready()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, err := h.CC.WaitForPicker(ctx, func(p lb.Picker) error {
		r, err := p.Pick(lb.PickInfo{Ctx: ctx})
		if err != nil || r.SubConn != scs[1] {
			return fmt.Errorf("picked %v, %v; want %v", r.SubConn, err, scs[1])
		}
		return nil
	})
	fmt.Println("picker ok:", err == nil)
	counts, _ := lbtest.CountPicks(p, 100)
	fmt.Println("picks on second SubConn:", counts[scs[1]])
	// Output:
	// SubConns: 2 connects: 2
	// state: CONNECTING
	// at 5s-1ns: CONNECTING
	// at 5s: TRANSIENT_FAILURE
	// picker ok: true
	// picks on second SubConn: 100
}
