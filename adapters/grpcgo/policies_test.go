package grpcgo_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
)

// holdServer answers like the who service, except that the one request it
// receives while armed is held until release is closed.
type holdServer struct {
	name    []byte
	armed   atomic.Bool
	held    chan struct{} // closed when the armed request arrives
	release chan struct{}
}

var holdDesc = grpc.ServiceDesc{
	ServiceName: "lbkit.test.Who",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Name",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			s := srv.(*holdServer)
			if s.armed.CompareAndSwap(true, false) {
				close(s.held)
				select {
				case <-s.release:
				case <-ctx.Done():
				}
			}
			name := s.name
			return &name, nil
		},
	}},
}

// startHoldServer starts a holdServer named name on 127.0.0.1.
func startHoldServer(t *testing.T, name string) (*holdServer, resolver.Address) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &holdServer{name: []byte(name), held: make(chan struct{}), release: make(chan struct{})}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	srv.RegisterService(&holdDesc, s)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	return s, resolver.Address{Addr: lis.Addr().String()}
}

// lbkit_least_request counts each RPC against its endpoint until grpc-go
// reports it done: with an RPC held on one of four servers and ten choices
// per pick, new RPCs avoid that server (it is chosen only when all ten
// samples are it, 4^-10 per RPC); once the held RPC completes, its Done
// counts it down and the server is picked again.
func TestLeastRequestCountsUntilDone(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	slow, slowAddr := startHoldServer(t, "slow")
	cl := newClient(t, resolver.State{Addresses: []resolver.Address{a.address(), b.address(), c.address(), slowAddr}},
		`{"loadBalancingConfig": [{"lbkit_least_request": {"choiceCount": 10}}]}`)
	cl.waitUntilServed(t, "a", "b", "c", "slow")

	// Every counter is 0: the first sample wins, a uniform choice. RPCs,
	// one at a time, until one is held on slow.
	slow.armed.Store(true)
	heldDone := make(chan struct{})
	go func() {
		defer close(heldDone)
		for {
			select {
			case <-slow.held:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			_, _ = cl.who(ctx, grpc.WaitForReady(true))
			cancel()
		}
	}()
	select {
	case <-slow.held:
	case <-heldDone:
	}
	if got := cl.count(t, 20)["slow"]; got != 0 {
		t.Fatalf("the server with an RPC in flight answered %d of 20 new RPCs, want 0", got)
	}
	close(slow.release)
	<-heldDone
	if got := cl.count(t, 200)["slow"]; got == 0 {
		t.Fatalf("after its RPC completed, the slow server answered none of 200 RPCs")
	}
}

// lbkit_round_robin rotates over the READY servers: once all three are
// READY, every 300 consecutive RPCs give 100 to each.
func TestRoundRobinRotates(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	cl := newClient(t, resolver.State{Addresses: []resolver.Address{a.address(), b.address(), c.address()}},
		`{"loadBalancingConfig": [{"lbkit_round_robin": {}}]}`)
	cl.waitUntilServed(t, "a", "b", "c")
	exactly(t, "300 RPCs", cl.count(t, 300), map[string]int{"a": 100, "b": 100, "c": 100})
}
