package grpcgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/balancer"
	grpcresolver "google.golang.org/grpc/resolver"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// bridge is the grpc-go balancer that runs one lbkit balancer tree.
//
// grpc-go calls its Balancer methods one at a time (from its own callback
// serializer); each runs the lbkit call inside ser with Run and waits for
// it, so they are serialized with the tree's timer callbacks and picker
// hops. The lbkit tree calls back through lbConn (the lb.ClientConn) from
// inside ser, and those calls go straight to grpc-go's ClientConn, which
// never waits for grpc-go's serializer: no lock or wait cycle exists.
//
// The lbkit balancer runs on scope and reaches lbConn through
// scope.ClientConn (see lb.Scope): Close closes the scope first, so
// nothing of the tree runs or reaches grpc-go afterwards, and grpc-go's
// own calls after Close are dropped here.
type bridge struct {
	// Set in newBridge, read-only afterwards.
	cc     balancer.ClientConn
	ser    *lb.Serializer
	scope  *lb.Scope
	logger *slog.Logger
	target string
	// picks is what the channel's pickers share.
	picks pickShared

	// Touched only inside ser.
	lbb   lb.Balancer
	addrs map[endpointKey][]grpcresolver.Address // grpc-go addresses of the last update's endpoints
}

var _ balancer.Balancer = (*bridge)(nil)

func newBridge(bb *Builder, cc balancer.ClientConn, bopts balancer.BuildOptions) *bridge {
	o := bb.opts
	if o.logger == nil {
		o.logger = conn.DefaultLogger()
	}
	b := &bridge{
		cc:     cc,
		ser:    lb.NewSerializer(o.clock),
		logger: o.logger.With("adapter", "grpcgo", "policy", bb.name),
		target: bopts.Target.String(),
	}
	b.scope = lb.NewScope(b.ser)
	b.picks = pickShared{
		authority: bopts.Authority,
		malformed: onceCounter{logger: b.logger, what: "malformed load reports"},
		timeouts:  onceCounter{logger: b.logger, what: "pick timeouts, which grpc-go's picker cannot apply"},
	}
	if o.observer != nil {
		o.observer(b.ser)
	}
	lbOpts := lb.BuildOptions{
		Clock:     o.clock,
		Logger:    o.logger,
		Rand:      o.newRand(),
		Scheduler: b.scope,
		Target:    b.target,
	}.WithDefaults()
	b.run(func() { b.lbb = bb.b.Build(b.scope.ClientConn((*lbConn)(b)), lbOpts) })
	return b
}

// run runs f inside the serializer and waits for it. It reports false if
// the serializer is closed, in which case f did not run.
func (b *bridge) run(f func()) bool {
	return b.ser.Run(context.Background(), f) == nil
}

var errClosed = errors.New("grpcgo: balancer is closed")

// UpdateClientConnState converts the resolver state (see the package
// documentation, "Addresses") and the parsed config, and passes them to the
// lbkit balancer. An lbkit error wrapping [lb.ErrBadResolverState] becomes
// [balancer.ErrBadResolverState], so grpc-go re-resolves with backoff.
func (b *bridge) UpdateClientConnState(s balancer.ClientConnState) error {
	var cfg lb.Config
	switch c := s.BalancerConfig.(type) {
	case nil:
	case *lbConfig:
		cfg = c.cfg
	default:
		return fmt.Errorf("grpcgo: config of type %T was not parsed by this policy's builder", s.BalancerConfig)
	}
	var err error
	ran := b.run(func() {
		if b.scope.Closed() {
			err = errClosed
			return
		}
		state, addrs := convertState(s.ResolverState)
		b.addrs = addrs
		err = b.lbb.UpdateClientConnState(lb.ClientConnState{ResolverState: state, BalancerConfig: cfg})
	})
	if !ran {
		return errClosed
	}
	if errors.Is(err, lb.ErrBadResolverState) {
		b.logger.Debug("grpcgo: policy rejected the resolver state", "error", err)
		return balancer.ErrBadResolverState
	}
	return err
}

// ResolverError passes err to the lbkit balancer.
func (b *bridge) ResolverError(err error) {
	b.run(func() {
		if !b.scope.Closed() {
			b.lbb.ResolverError(err)
		}
	})
}

// ExitIdle passes the call to the lbkit balancer.
func (b *bridge) ExitIdle() {
	b.run(func() {
		if !b.scope.Closed() {
			b.lbb.ExitIdle()
		}
	})
}

// UpdateSubConnState is never called: every SubConn is created with a
// StateListener.
func (b *bridge) UpdateSubConnState(sc balancer.SubConn, s balancer.SubConnState) {
	b.logger.Error("grpcgo: unexpected UpdateSubConnState", "subconn", sc, "state", s.ConnectivityState)
}

// Close closes the lbkit balancer's scope (which ends its timers and
// hops), the balancer (which shuts down its SubConns) and then the
// serializer, so that no goroutine of the tree is left when it returns.
func (b *bridge) Close() {
	b.run(func() {
		if !b.scope.Closed() {
			b.scope.Close()
			b.lbb.Close()
		}
	})
	b.ser.Close()
}

// lbConn is the lb.ClientConn the lbkit tree reports to. Its methods are
// called inside the serializer, through the scope's ClientConn, which
// drops them once the bridge is closed.
type lbConn bridge

var _ lb.ClientConn = (*lbConn)(nil)

// NewSubConn creates a grpc-go SubConn for the grpc-go addresses behind
// addrs, whose state listener runs the lbkit listener inside the
// serializer.
func (c *lbConn) NewSubConn(addrs []resolver.Address, opts lb.NewSubConnOptions) (lb.SubConn, error) {
	b := (*bridge)(c)
	if opts.StateListener == nil {
		return nil, errors.New("grpcgo: NewSubConn without a StateListener")
	}
	var gaddrs []grpcresolver.Address
	for _, a := range addrs {
		gaddrs = append(gaddrs, b.grpcAddresses(a)...)
	}
	sc := &subConn{b: b, listener: opts.StateListener}
	// NewSubConn's deprecation warns that SubConns will take one address;
	// it is still grpc-go's only way for a balancer to create a SubConn.
	//lint:ignore SA1019 no replacement exists in grpc-go
	gsc, err := b.cc.NewSubConn(gaddrs, balancer.NewSubConnOptions{StateListener: sc.onState})
	if err != nil {
		return nil, fmt.Errorf("grpcgo: %w", err)
	}
	sc.sc = gsc
	return sc, nil
}

// UpdateState publishes the lbkit state and picker to grpc-go.
func (c *lbConn) UpdateState(s lb.State) {
	b := (*bridge)(c)
	b.cc.UpdateState(balancer.State{
		ConnectivityState: toGRPCState(s.ConnectivityState),
		Picker:            newPicker(s.Picker, &b.picks),
	})
}

// ResolveNow asks grpc-go's resolver to resolve again.
func (c *lbConn) ResolveNow() {
	c.cc.ResolveNow(grpcresolver.ResolveNowOptions{})
}

// Target returns the channel's parsed dial target, as a string.
func (c *lbConn) Target() string { return c.target }

// grpcAddresses returns the grpc-go addresses of the endpoint a stands for:
// those of the last update, or, for an endpoint no longer in it, ones
// rebuilt from a (address and server name only).
func (b *bridge) grpcAddresses(a resolver.Address) []grpcresolver.Address {
	k := keyOf(a)
	if g, ok := b.addrs[k]; ok {
		return g
	}
	return k.rebuild()
}
