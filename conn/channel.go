package conn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/internal/option"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// ErrClosed is returned by picks on a closed channel, and fails picks that
// were waiting when it closed.
var ErrClosed = errors.New("conn: channel closed")

// Channel balances requests for one target across connections. Create it
// with [New].
//
// All methods are safe for concurrent use. Internally, the resolver's
// updates, the balancer tree, SubConn state changes and every timer run on
// one [lb.Serializer]; Pick reads an atomically published picker and never
// takes a lock.
type Channel struct {
	target  string
	parsed  resolver.Target
	rb      resolver.Builder
	cfg     config
	clock   clock.Clock
	logger  *slog.Logger
	ser     *lb.Serializer
	defSC   *serviceConfig // from WithDefaultServiceConfig; nil means pick_first
	metrics channelMetrics
	subs    subscribers // Subscribe's subscriptions

	// Read by Pick without locks.
	gen         atomic.Pointer[pickerGen]
	stateGen    atomic.Pointer[stateGen]
	active      atomic.Bool                   // a pick happened since the last idleness check
	waiting     atomic.Int64                  // picks waiting for a new picker
	exitIdleReq atomic.Bool                   // an exitIdle is scheduled
	lastPickErr atomic.Pointer[lb.TimedError] // the last failed pick, for the snapshot
	shut        atomic.Bool                   // Close has begun

	ctx     context.Context // cancelled by Close: ends every dial
	cancel  context.CancelFunc
	wg      sync.WaitGroup // every goroutine the channel starts, but resolver closers
	closing sync.Once
	conns   connSet // every Conn a dialer returned and nobody closed yet
	// detached counts the goroutines that run code the channel does not
	// control and that Close cancels but waits for only detachedGrace:
	// closing replaced resolvers, and health checks.
	detached sync.WaitGroup

	// Owned by the serializer.
	rand           *rand.Rand
	idle           bool
	closed         bool
	res            resolver.Resolver
	resCC          *resolverCC
	current        *balancerWrapper
	pending        *balancerWrapper
	lastSC         *serviceConfig  // last valid service config from the resolver
	warnedSC       string          // the last service config whose unknown fields were logged
	health         *healthSettings // health checking in force; nil when off
	warnedHealth   bool            // a SubConn without health checking was logged while it was on
	addrConns      map[connKey]*addrConn
	resolverErr    *lb.TimedError // the resolver's error since its last update
	rejectedSC     *lb.TimedError // the resolver's invalid service config since its last valid one
	resolveRetries int
	resolveTimer   lb.Timer
	idleTimer      lb.Timer
}

// pickerGen is one published picker. done is closed when the next one is
// published, waking every pick that waits on this one.
type pickerGen struct {
	picker lb.Picker
	idle   bool // the channel is idle: a pick must ask it to leave idle
	done   chan struct{}
	// state is the channel's state published with picker: State reads
	// it, so a pick that saw this picker and State agree (stateGen, set
	// just after, wakes WaitForStateChange once both are in place).
	state lb.ConnectivityState
}

type stateGen struct {
	state   lb.ConnectivityState
	since   time.Time // when state began, on the channel's clock
	changed chan struct{}
}

// New returns an IDLE channel for target, such as "dns:///example.com:443",
// "static:///10.0.0.1:80,10.0.0.2:80" or "example.com:443" (default scheme).
// It fails if the target does not parse, no resolver is registered for its
// scheme, or an option is invalid; the error names the problem.
func New(target string, opts ...Option) (*Channel, error) {
	cfg := defaultConfig()
	if err := option.CheckNil(opts); err != nil {
		return nil, fmt.Errorf("conn: %w", err)
	}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("conn: %w", err)
	}
	cfg.withDefaults()
	parsed, rb, err := resolveTarget(target, cfg)
	if err != nil {
		return nil, err
	}
	var defSC *serviceConfig
	if cfg.defaultServiceConfig != "" {
		if defSC, err = parseServiceConfig([]byte(cfg.defaultServiceConfig), cfg.registry, cfg.strictConfig); err != nil {
			return nil, fmt.Errorf("conn: %s: %w", cfg.defaultSCOption, err)
		}
	}
	c := &Channel{
		target:    target,
		parsed:    parsed,
		rb:        rb,
		cfg:       cfg,
		clock:     cfg.clock,
		logger:    cfg.logger.With("target", target),
		ser:       lb.NewSerializer(cfg.clock),
		defSC:     defSC,
		metrics:   newChannelMetrics(cfg.metrics, target),
		rand:      cfg.newRand(),
		idle:      true,
		addrConns: make(map[connKey]*addrConn),
	}
	if defSC != nil {
		c.warnUnknown([]byte(cfg.defaultServiceConfig), defSC)
	}
	c.health = c.effectiveHealth()
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.stateGen.Store(&stateGen{state: lb.Idle, since: c.clock.Now(), changed: make(chan struct{})})
	c.gen.Store(&pickerGen{picker: lb.NewQueuePicker(), idle: true, done: make(chan struct{})})
	return c, nil
}

// resolveTarget parses target and finds its resolver builder.
func resolveTarget(target string, cfg config) (resolver.Target, resolver.Builder, error) {
	parsed, err := resolver.ParseTargetWith(target, cfg.defaultScheme, cfg.resolverBuilder)
	if err != nil {
		return resolver.Target{}, nil, fmt.Errorf("conn: %w", err)
	}
	if cfg.resolverBuilder != nil {
		return parsed, cfg.resolverBuilder, nil
	}
	if b := resolver.Get(parsed.Scheme); b != nil {
		return parsed, b, nil
	}
	return resolver.Target{}, nil, fmt.Errorf("conn: target %q: no resolver registered for scheme %q (registered: %v)",
		target, parsed.Scheme, resolver.Schemes())
}

// Target returns the target the channel was created with.
func (c *Channel) Target() string { return c.target }

// Clock returns the channel's clock ([WithClock]), for a transport that
// times its requests on it (adapters/nethttp applies a route's timeout,
// [PickResult].Timeout, as a deadline on it).
func (c *Channel) Clock() clock.Clock { return c.clock }

// State returns the channel's connectivity state: the state published with
// the picker in use, so a pick's outcome and State never disagree.
func (c *Channel) State() lb.ConnectivityState { return c.gen.Load().state }

// WaitForStateChange waits until the channel's state differs from from, and
// reports true; or until ctx ends, and reports false.
func (c *Channel) WaitForStateChange(ctx context.Context, from lb.ConnectivityState) bool {
	for {
		g := c.stateGen.Load()
		if g.state != from {
			return true
		}
		select {
		case <-g.changed:
		case <-ctx.Done():
			return false
		}
	}
}

// Settle waits until the channel has no work queued and no timer due on its
// clock, or until ctx ends (returning its error). It is for tests that drive
// the channel with a mock clock ([WithClock]): after advancing the clock,
// Settle returns once every timer that became due has run, with all it
// caused inside the channel, so the test need not poll. Work outside the
// channel (a dial in flight, a resolver's own goroutine) is not waited for.
func (c *Channel) Settle(ctx context.Context) error {
	return c.ser.WaitIdle(ctx, c.clock.Now())
}

// Connect makes an IDLE channel start resolving and connecting, and asks its
// balancer to leave IDLE; it does not wait.
func (c *Channel) Connect() {
	c.ser.Schedule(func() {
		if c.closed {
			return
		}
		if c.idle {
			c.exitIdle()
			return
		}
		if c.current != nil {
			c.current.b.ExitIdle()
		}
	})
}

// Close shuts the channel down: the balancer, resolver and every connection
// are closed, pending picks fail with [ErrClosed], and when Close returns
// every Conn a dialer returned has been closed and every goroutine the
// channel started has ended. Close never waits on the resolver's I/O: a
// resolver whose own Close has not returned within a grace period (a
// fraction of a second) is left to finish by itself, and an error is
// logged. Later calls do nothing.
func (c *Channel) Close() error {
	c.closing.Do(func() {
		c.shut.Store(true)
		_ = c.ser.Run(context.Background(), func() {
			c.teardown()
			c.closed = true
			c.publish(&pickerGen{picker: lb.NewErrPicker(lb.DropError(ErrClosed)), state: lb.Shutdown})
			c.setState(lb.Shutdown)
		})
		c.ser.Close()
		c.closeSubscriptions()
		c.cancel()
		c.wg.Wait()
		// Dials that completed as Close ran handed their Conns to a
		// serializer that no longer runs anything: close them here.
		if n := c.conns.closeAll(); n > 0 {
			c.logger.Debug("closed connections whose dial completed during Close", "connections", n)
		}
		c.waitDetached()
	})
	return nil
}

// detachedGrace bounds how long Close waits for resolvers to close and
// health checks to return. It is real time, not the channel's clock: it
// guards against a resolver or checker that breaks its contract (waits on
// I/O in Close, ignores its context), and a mock clock does not move while
// Close waits.
const detachedGrace = 200 * time.Millisecond

// closeResolver closes r on a goroutine of its own, so that neither the
// serializer nor idle entry waits for it.
func (c *Channel) closeResolver(r resolver.Resolver) { c.goDetached(r.Close) }

// goDetached runs f on a goroutine that Close waits for at most
// detachedGrace.
func (c *Channel) goDetached(f func()) {
	c.detached.Add(1)
	go func() {
		defer c.detached.Done()
		f()
	}()
}

// waitDetached waits for every detached goroutine to end, at most
// detachedGrace.
func (c *Channel) waitDetached() {
	done := make(chan struct{})
	go func() {
		c.detached.Wait()
		close(done)
	}()
	grace := time.NewTimer(detachedGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		c.logger.Error("a resolver's Close or a health check did not return in time; leaving it to finish on its own (resolvers must not wait on I/O in Close; checkers must return when their context ends)",
			"resolver", c.parsed.Scheme, "timeout", detachedGrace)
	}
}

// publish makes g the current picker and wakes every waiting pick.
func (c *Channel) publish(g *pickerGen) {
	g.done = make(chan struct{})
	old := c.gen.Swap(g)
	close(old.done)
}

// setState records the channel's state and wakes WaitForStateChange.
func (c *Channel) setState(s lb.ConnectivityState) {
	old := c.stateGen.Load()
	if old.state == s {
		return
	}
	c.stateGen.Store(&stateGen{state: s, since: c.clock.Now(), changed: make(chan struct{})})
	close(old.changed)
	c.logger.Debug("channel state", "state", s)
	c.emit(lb.Event{Kind: lb.EventChannelState, State: s})
}

// requestExitIdle schedules one exitIdle however many picks ask for it.
func (c *Channel) requestExitIdle() {
	if c.exitIdleReq.CompareAndSwap(false, true) {
		c.ser.Schedule(func() {
			c.exitIdleReq.Store(false)
			if c.idle && !c.closed {
				c.exitIdle()
			}
		})
	}
}

// exitIdle starts the resolver and the idleness timer. Runs serialized.
func (c *Channel) exitIdle() {
	c.idle = false
	c.publish(&pickerGen{picker: lb.NewQueuePicker(), state: lb.Connecting})
	c.setState(lb.Connecting)
	cc := &resolverCC{c: c}
	c.resCC = cc
	r, err := c.rb.Build(c.parsed, cc, resolver.BuildOptions{
		Clock:         c.clock,
		Logger:        c.logger,
		Rand:          rand.New(rand.NewPCG(c.rand.Uint64(), c.rand.Uint64())),
		ChannelTarget: c.target,
	})
	if err != nil {
		c.resCC = nil
		c.logger.Warn("resolver failed to start", "error", err)
		c.publishFailure(fmt.Errorf("conn: starting resolver for %q: %w", c.target, err))
		// Stay out of idle so picks fail fast; the idleness timer brings
		// the channel back to IDLE, and the next pick retries.
	} else {
		c.res = r
	}
	c.armIdleTimer()
}

// publishFailure publishes a channel-level TRANSIENT_FAILURE.
func (c *Channel) publishFailure(err error) {
	c.publish(&pickerGen{picker: lb.NewErrPicker(lb.TransientFailureError(err)), state: lb.TransientFailure})
	c.setState(lb.TransientFailure)
}

// armIdleTimer checks for activity ten times per idle period.
func (c *Channel) armIdleTimer() {
	if c.cfg.idleTimeout == 0 {
		return
	}
	step := max(c.cfg.idleTimeout/10, 1)
	checks := 0
	var check func()
	check = func() {
		if c.active.Swap(false) || c.waiting.Load() > 0 {
			checks = 0
		} else {
			checks++
		}
		if checks >= 10 {
			c.idleTimer = nil
			c.enterIdle()
			return
		}
		c.idleTimer = c.ser.AfterFunc(step, check)
	}
	c.idleTimer = c.ser.AfterFunc(step, check)
}

// enterIdle closes the balancer, resolver and connections and reports IDLE.
func (c *Channel) enterIdle() {
	c.logger.Info("channel idle: no pick for the idle timeout", "timeout", c.cfg.idleTimeout)
	c.teardown()
	c.idle = true
	c.publish(&pickerGen{picker: lb.NewQueuePicker(), idle: true, state: lb.Idle})
	c.setState(lb.Idle)
}

// teardown closes balancers, the resolver, timers and connections.
func (c *Channel) teardown() {
	for _, w := range []*balancerWrapper{c.pending, c.current} {
		if w != nil {
			w.close()
		}
	}
	c.pending, c.current = nil, nil
	if c.res != nil {
		c.closeResolver(c.res)
		c.res = nil
	}
	c.resCC = nil
	for _, t := range []lb.Timer{c.resolveTimer, c.idleTimer} {
		if t != nil {
			t.Stop()
		}
	}
	c.resolveTimer, c.idleTimer = nil, nil
	c.resolveRetries = 0
	for _, ac := range c.addrConns {
		ac.close()
	}
}
