package grpcgo

import (
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"

	"github.com/lbkit/lbkit/lb"
)

// subConn is the lb.SubConn handed to the lbkit tree: a grpc-go SubConn and
// the lbkit listener of its states.
type subConn struct {
	b *bridge
	// sc is set right after grpc-go creates the SubConn, before the lbkit
	// tree sees this subConn; read-only afterwards. Pickers return it
	// without a lookup.
	sc       balancer.SubConn
	listener func(lb.SubConnState)
	shutdown bool // touched only inside the serializer
	// done caches the grpc-go Done made for the last lbkit Done picked
	// with this SubConn (see picker.Pick), so that a policy whose Done is
	// one function per endpoint costs no allocation per pick.
	done atomic.Pointer[doneAdapter]
}

var _ lb.SubConn = (*subConn)(nil)

// Connect asks grpc-go to connect the SubConn.
func (s *subConn) Connect() { s.sc.Connect() }

// Shutdown shuts the grpc-go SubConn down, once.
func (s *subConn) Shutdown() {
	if s.shutdown {
		return
	}
	s.shutdown = true
	s.sc.Shutdown()
}

// String names the grpc-go SubConn, for logs.
func (s *subConn) String() string { return fmt.Sprint(s.sc) }

// onState is the grpc-go StateListener. grpc-go calls it from its own
// serializer; it runs the lbkit listener inside the tree's serializer and
// waits, so states arrive in grpc-go's order, serialized with everything
// else. States after the balancer closed are dropped (the listener is the
// one wrapped by the tree's scope, see lb.Scope.ClientConn).
func (s *subConn) onState(st balancer.SubConnState) {
	s.b.run(func() {
		s.listener(lb.SubConnState{
			ConnectivityState: toLBState(st.ConnectivityState),
			ConnectionError:   st.ConnectionError,
		})
	})
}

// states pairs grpc-go's connectivity states with lbkit's, one to one.
var states = [...]struct {
	grpc connectivity.State
	lb   lb.ConnectivityState
}{
	{connectivity.Idle, lb.Idle},
	{connectivity.Connecting, lb.Connecting},
	{connectivity.Ready, lb.Ready},
	{connectivity.TransientFailure, lb.TransientFailure},
	{connectivity.Shutdown, lb.Shutdown},
}

// toLBState maps grpc-go's connectivity states one to one onto lbkit's.
// grpc-go has no other state; an unknown one is not usable.
func toLBState(s connectivity.State) lb.ConnectivityState {
	for _, p := range states {
		if p.grpc == s {
			return p.lb
		}
	}
	return lb.TransientFailure
}

// toGRPCState maps lbkit's connectivity states one to one onto grpc-go's.
func toGRPCState(s lb.ConnectivityState) connectivity.State {
	for _, p := range states {
		if p.lb == s {
			return p.grpc
		}
	}
	return connectivity.TransientFailure
}
