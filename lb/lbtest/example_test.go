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
// update. It does what every real policy must: an update diffs its
// SubConns against the new addresses (keeping those still listed, creating
// the new ones, shutting down the removed ones), a new deadline stops the
// old one, and Close stops its timer and shuts down its SubConns. For a
// leaf policy over a list of endpoints, start from lb/endpointlist, which
// does all of this for you (round_robin, least_request and wrr do).
type firstReady struct {
	cc       lb.ClientConn
	opts     lb.BuildOptions
	order    []string              // addresses, in the last update's order
	subConns map[string]lb.SubConn // by address
	states   map[lb.SubConn]lb.ConnectivityState
	deadline lb.Timer // nil until the first update
}

type firstReadyBuilder struct{}

func (firstReadyBuilder) Name() string { return "example_first_ready" }

func (firstReadyBuilder) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	return &firstReady{cc: cc, opts: opts.WithDefaults(),
		subConns: make(map[string]lb.SubConn), states: make(map[lb.SubConn]lb.ConnectivityState)}
}

func (b *firstReady) UpdateClientConnState(s lb.ClientConnState) error {
	listed := make(map[string]bool)
	b.order = b.order[:0]
	for _, a := range s.ResolverState.Addresses {
		listed[a.Addr] = true
		b.order = append(b.order, a.Addr)
		if b.subConns[a.Addr] != nil {
			continue // kept: no new connection
		}
		var sc lb.SubConn
		sc, err := b.cc.NewSubConn([]resolver.Address{a}, lb.NewSubConnOptions{
			StateListener: func(st lb.SubConnState) {
				if st.ConnectivityState == lb.Shutdown {
					return
				}
				b.states[sc] = st.ConnectivityState
				b.publish()
			},
		})
		if err != nil {
			return err
		}
		b.subConns[a.Addr] = sc
		sc.Connect()
	}
	for addr, sc := range b.subConns {
		if !listed[addr] { // removed by this update
			sc.Shutdown()
			delete(b.subConns, addr)
			delete(b.states, sc)
		}
	}
	if b.deadline != nil {
		b.deadline.Stop() // a new update, a new deadline
	}
	b.deadline = b.opts.Scheduler.AfterFunc(5*time.Second, func() {
		b.cc.UpdateState(lb.State{ConnectivityState: lb.TransientFailure,
			Picker: lb.NewErrPicker(lb.TransientFailureError(errors.New("nothing ready after 5s")))})
	})
	b.publish()
	return nil
}

func (b *firstReady) publish() {
	for _, addr := range b.order {
		if sc := b.subConns[addr]; b.states[sc] == lb.Ready {
			b.deadline.Stop()
			b.cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: fixedPicker{sc}})
			return
		}
	}
	b.cc.UpdateState(lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()})
}

func (b *firstReady) ResolverError(error) {}
func (b *firstReady) ExitIdle()           {}

// Close stops the timer, so that no callback runs after it, and shuts
// down every SubConn.
func (b *firstReady) Close() {
	if b.deadline != nil {
		b.deadline.Stop()
	}
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

	// An update that drops 10.0.0.1 and adds 10.0.0.3 keeps 10.0.0.2's
	// SubConn, creates one and shuts one down.
	h.UpdateAddresses(nil, resolver.Address{Addr: "10.0.0.2:80"}, resolver.Address{Addr: "10.0.0.3:80"})
	fmt.Println("SubConns made:", len(h.CC.SubConns()), "first shut down:", scs[0].IsShutdown(), "second kept:", !scs[1].IsShutdown())
	// Output:
	// SubConns: 2 connects: 2
	// state: CONNECTING
	// at 5s-1ns: CONNECTING
	// at 5s: TRANSIENT_FAILURE
	// picker ok: true
	// picks on second SubConn: 100
	// SubConns made: 3 first shut down: true second kept: true
}
