package grpcbench_test

import (
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// observerName is the leaf policy the benchmark's cluster names, in both
// grpc-go's registry and lbkit's: each makes a SubConn for every new
// endpoint (never connected: nothing is dialled), shuts down the gone
// ones, publishes a READY picker of the list at once, and reports the
// list's first address to the current subscriber. It is the least a real
// leaf does with an update, the same in both trees.
const observerName = "lbkit_bench_observer"

func init() {
	balancer.Register(grpcObserverBuilder{})
	lb.Register(lbObserverBuilder{})
}

// observers holds the channel the observers report to: one test or
// benchmark at a time subscribes.
var observers sink

// sink is a channel that may be set and unset while observers report.
type sink struct {
	mu sync.Mutex
	ch chan string
}

func (s *sink) set(ch chan string) {
	s.mu.Lock()
	s.ch = ch
	s.mu.Unlock()
}

// report sends addr without blocking: a full channel drops it.
func (s *sink) report(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.ch <- addr:
	default:
	}
}

// grpcObserverBuilder builds the observer for grpc-go.
type grpcObserverBuilder struct{}

func (grpcObserverBuilder) Name() string { return observerName }

func (grpcObserverBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	return &grpcObserver{cc: cc, subs: subConnSet[balancer.SubConn]{}}
}

// grpcObserver is the observer in grpc-go's tree, called from its
// serializer.
type grpcObserver struct {
	cc   balancer.ClientConn
	subs subConnSet[balancer.SubConn]
}

func (o *grpcObserver) UpdateClientConnState(s balancer.ClientConnState) error {
	eps := s.ResolverState.Endpoints
	if len(eps) == 0 {
		return balancer.ErrBadResolverState
	}
	return o.subs.update(len(eps), func(i int) string { return eps[i].Addresses[0].Addr }, func(i int) (balancer.SubConn, error) {
		//lint:ignore SA1019 one address per SubConn, as the deprecation asks; it is how a leaf of grpc-go 1.85 makes SubConns
		return o.cc.NewSubConn(eps[i].Addresses[:1], balancer.NewSubConnOptions{StateListener: func(balancer.SubConnState) {}})
	}, func(first balancer.SubConn) {
		o.cc.UpdateState(balancer.State{ConnectivityState: connectivity.Ready, Picker: grpcPicker{first}})
	})
}

func (o *grpcObserver) ResolverError(error)                                        {}
func (o *grpcObserver) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (o *grpcObserver) ExitIdle()                                                  {}
func (o *grpcObserver) Close()                                                     {}

// grpcPicker picks one SubConn.
type grpcPicker struct{ sc balancer.SubConn }

func (p grpcPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{SubConn: p.sc}, nil
}

// lbObserverBuilder builds the observer for lbkit.
type lbObserverBuilder struct{}

func (lbObserverBuilder) Name() string { return observerName }

func (lbObserverBuilder) Build(cc lb.ClientConn, _ lb.BuildOptions) lb.Balancer {
	return &lbObserver{cc: cc, subs: subConnSet[lb.SubConn]{}}
}

// lbObserver is the observer in lbkit's tree, called from its serializer.
type lbObserver struct {
	cc   lb.ClientConn
	subs subConnSet[lb.SubConn]
}

func (o *lbObserver) UpdateClientConnState(s lb.ClientConnState) error {
	addrs := s.ResolverState.Addresses
	if len(addrs) == 0 {
		return resolver.ErrNoAddresses
	}
	return o.subs.update(len(addrs), func(i int) string { return addrs[i].Addr }, func(i int) (lb.SubConn, error) {
		return o.cc.NewSubConn(addrs[i:i+1], lb.NewSubConnOptions{StateListener: func(lb.SubConnState) {}})
	}, func(first lb.SubConn) {
		o.cc.UpdateState(lb.State{ConnectivityState: lb.Ready, Picker: lbPicker{first}})
	})
}

func (o *lbObserver) ResolverError(error) {}
func (o *lbObserver) ExitIdle()           {}
func (o *lbObserver) Close()              {}

// lbPicker picks one SubConn.
type lbPicker struct{ sc lb.SubConn }

func (p lbPicker) Pick(lb.PickInfo) (lb.PickResult, error) { return lb.PickResult{SubConn: p.sc}, nil }

// subConnSet is what both observers keep: a SubConn per address.
type subConnSet[SC interface{ Shutdown() }] map[string]SC

// update makes the set hold the n addresses addr(0) to addr(n-1) (newSC(i)
// makes the SubConn of each address not held yet, and those of the
// addresses no longer listed are shut down), then calls publish with the
// first address's SubConn and reports that address to the subscriber.
func (s subConnSet[SC]) update(n int, addr func(int) string, newSC func(int) (SC, error), publish func(first SC)) error {
	listed := make(map[string]bool, n)
	for i := range n {
		a := addr(i)
		listed[a] = true
		if _, ok := s[a]; ok {
			continue
		}
		sc, err := newSC(i)
		if err != nil {
			return err
		}
		s[a] = sc
	}
	for a, sc := range s {
		if !listed[a] {
			sc.Shutdown()
			delete(s, a)
		}
	}
	publish(s[addr(0)])
	observers.report(addr(0))
	return nil
}
