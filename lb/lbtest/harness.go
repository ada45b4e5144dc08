package lbtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/internal/option"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Harness runs one balancer under test: it owns a mock clock, the
// [lb.Serializer] of the tree, and the fake [ClientConn] the balancer
// reports to. Create it with [New]; it is closed at the end of the test.
//
// Its methods must be called from the test's goroutine.
type Harness struct {
	tb TB

	// Clock is the mock clock every timer of the tree runs on. Advance it
	// with [Harness.Advance], not Clock.Add, so the harness can wait for
	// the timers' callbacks.
	Clock *clock.Mock
	// Serializer runs the tree's calls and timer callbacks.
	Serializer *lb.Serializer
	// CC is the fake ClientConn the balancer reports to.
	CC *ClientConn
	// Balancer is the balancer built by [Harness.Build].
	Balancer lb.Balancer
	// Metrics records the tree's metrics ([lb.BuildOptions].Metrics).
	Metrics *Metrics

	opts     lb.BuildOptions
	registry *lb.Registry
	// scope is the balancer's (see [lb.Scope]); nil before Build.
	scope  *lb.Scope
	closed bool
}

// Option configures a [Harness].
type Option interface{ apply(*harnessConfig) }

type harnessConfig struct {
	seed     uint64
	logger   *slog.Logger
	target   string
	registry *lb.Registry
}

type optionFunc func(*harnessConfig)

func (f optionFunc) apply(c *harnessConfig) { f(c) }

// WithSeed seeds the tree's random source. If this option is not supplied,
// the seed is 1, so runs are reproducible.
func WithSeed(seed uint64) Option {
	return optionFunc(func(c *harnessConfig) { c.seed = seed })
}

// WithLogger sets the tree's logger. If this option is not supplied, logs are
// discarded.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *harnessConfig) { c.logger = l })
}

// WithTarget sets the channel target the fake ClientConn reports. If this
// option is not supplied, it is "lbtest:///target".
func WithTarget(target string) Option {
	return optionFunc(func(c *harnessConfig) { c.target = target })
}

// WithRegistry makes [Harness.BuildPolicy] look policies up in r. A test
// that registers its own policies in a registry of its own, rather than with
// [lb.Register], shares nothing with other tests and may call t.Parallel.
// If this option is not supplied, or r is nil, it is [lb.DefaultRegistry]
// ([NewParent] supplies a new registry).
func WithRegistry(r *lb.Registry) Option {
	return optionFunc(func(c *harnessConfig) {
		if r != nil {
			c.registry = r
		}
	})
}

// New returns a harness whose mock clock starts at the Unix epoch. The
// balancer and serializer are closed when the test ends.
func New(tb TB, options ...Option) *Harness {
	cfg := harnessConfig{seed: 1, logger: slog.New(slog.DiscardHandler), target: "lbtest:///target",
		registry: lb.DefaultRegistry()}
	option.MustNotBeNil("lbtest.New", options)
	for _, o := range options {
		o.apply(&cfg)
	}
	mock := clock.NewMock()
	s := lb.NewSerializer(mock)
	h := &Harness{
		tb:         tb,
		Clock:      mock,
		Serializer: s,
		CC:         NewClientConn(tb, s, cfg.target),
		Metrics:    NewMetrics(),
		registry:   cfg.registry,
	}
	h.opts = lb.BuildOptions{
		Clock:     mock,
		Logger:    cfg.logger,
		Rand:      rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15)),
		Scheduler: s,
		Target:    cfg.target,
		Metrics:   h.Metrics,
	}.WithDefaults()
	tb.Cleanup(h.Close)
	return h
}

// BuildOptions returns the options the harness builds balancers with: its
// mock clock, logger, seeded random source, serializer and metrics, and
// the defaults of [lb.BuildOptions.WithDefaults] for the rest.
func (h *Harness) BuildOptions() lb.BuildOptions { return h.opts }

// Registry returns the registry [Harness.BuildPolicy] looks policies up
// in ([WithRegistry]).
func (h *Harness) Registry() *lb.Registry { return h.registry }

// Build builds the balancer under test from b, inside the serializer, and
// stores it in h.Balancer. As a parent does, the harness gives the
// balancer a scope of its own ([lb.Scope]) as its Scheduler, and the
// scope's ClientConn over h.CC; [Harness.CloseBalancer] closes it.
func (h *Harness) Build(b lb.Builder) lb.Balancer {
	h.tb.Helper()
	h.Do(func() {
		h.scope = lb.NewScope(h.Serializer)
		opts := h.opts
		opts.Scheduler = h.scope
		h.Balancer = b.Build(h.scope.ClientConn(h.CC), opts)
	})
	return h.Balancer
}

// CloseBalancer closes the balancer under test as a parent does: it closes
// the balancer's scope, then calls Close, inside the serializer. From then
// on nothing of the balancer runs (see [lb.Scope]), and the harness's calls
// into it (UpdateClientConnState, ResolverError, ExitIdle, CloseBalancer)
// do nothing, as a parent makes none.
func (h *Harness) CloseBalancer() {
	h.tb.Helper()
	h.Do(h.closeBalancer)
}

func (h *Harness) closeBalancer() {
	if h.Balancer == nil || !h.live() {
		return
	}
	if h.scope != nil { // nil when the test set h.Balancer itself
		h.scope.Close()
	}
	h.Balancer.Close()
}

// live reports, inside the serializer, whether the balancer under test may
// be called: CloseBalancer has not closed it.
func (h *Harness) live() bool { return h.scope == nil || !h.scope.Closed() }

// BuildPolicy builds the policy registered as name in [Harness.Registry],
// parsing configJSON with its builder (empty means no config), and returns
// the balancer and the parsed config to pass in [lb.ClientConnState].
func (h *Harness) BuildPolicy(name, configJSON string) (lb.Balancer, lb.Config) {
	h.tb.Helper()
	b := h.registry.Get(name)
	if b == nil {
		h.tb.Fatalf("lbtest: no policy registered as %q", name)
	}
	cfg, _, err := lb.ParseConfig(b, []byte(configJSON))
	if err != nil {
		h.tb.Fatalf("lbtest: parsing %s config: %v", name, err)
	}
	return h.Build(b), cfg
}

// Do runs f inside the serializer and waits until f and everything it
// scheduled have finished. A hang fails the test.
func (h *Harness) Do(f func()) {
	h.tb.Helper()
	h.CC.DeliverQueued()
	if err := runAndSettle(h.Serializer, f); err != nil {
		h.tb.Fatalf("lbtest: serialized call: %v", err)
	}
}

// UpdateClientConnState calls the balancer's UpdateClientConnState and
// returns its error.
func (h *Harness) UpdateClientConnState(s lb.ClientConnState) error {
	h.tb.Helper()
	var err error
	h.Do(func() {
		if h.live() {
			err = h.Balancer.UpdateClientConnState(s)
		}
	})
	return err
}

// UpdateAddresses calls UpdateClientConnState with addrs and cfg, and returns
// its error.
func (h *Harness) UpdateAddresses(cfg lb.Config, addrs ...resolver.Address) error {
	h.tb.Helper()
	return h.UpdateClientConnState(lb.ClientConnState{
		ResolverState:  resolver.State{Addresses: addrs},
		BalancerConfig: cfg,
	})
}

// ResolverError calls the balancer's ResolverError.
func (h *Harness) ResolverError(err error) {
	h.tb.Helper()
	h.Do(func() {
		if h.live() {
			h.Balancer.ResolverError(err)
		}
	})
}

// ExitIdle calls the balancer's ExitIdle.
func (h *Harness) ExitIdle() {
	h.tb.Helper()
	h.Do(func() {
		if h.live() {
			h.Balancer.ExitIdle()
		}
	})
}

// Settle waits until everything scheduled on the serializer (for example by
// a picker) has run, without moving the clock.
func (h *Harness) Settle() {
	h.tb.Helper()
	h.Do(func() {})
}

// Advance moves the mock clock forward by d, one timer deadline at a time.
// At each deadline it waits until every timer due then has run its callback
// and the serializer is idle, so a timer set by a callback is measured from
// the instant its parent fired, exactly as with a real clock. When Advance
// returns, the clock reads now+d and every consequence has been recorded.
func (h *Harness) Advance(d time.Duration) {
	h.tb.Helper()
	h.CC.DeliverQueued()
	AdvanceSerializers(h.tb, h.Clock, d, h.Serializer)
}

// AdvanceToNextDeadline moves the clock to the earliest pending timer's
// deadline and waits as Advance does. It returns how far the clock moved,
// and false (moving nothing) when no timer is pending.
func (h *Harness) AdvanceToNextDeadline() (time.Duration, bool) {
	h.tb.Helper()
	next, ok := h.Serializer.NextDeadline()
	if !ok {
		return 0, false
	}
	d := max(next.Sub(h.Clock.Now()), 0)
	h.CC.DeliverQueued()
	moveTo(h.tb, h.Clock, next, h.Serializer)
	return d, true
}

// AdvanceSerializers does what [Harness.Advance] does for balancer trees
// the harness did not build: it moves mock forward by d, one timer deadline
// (the earliest among sers) at a time, and at each deadline waits until
// every serializer in sers has run its due timers and everything they
// caused. Use it for a tree a channel or an adapter runs on mock, reaching
// its serializer with [lb.SerializerOf] from the [lb.BuildOptions].Scheduler
// a test policy is built with. A d of 0 only waits. A hang fails tb.
func AdvanceSerializers(tb TB, mock *clock.Mock, d time.Duration, sers ...*lb.Serializer) {
	tb.Helper()
	if d < 0 {
		tb.Fatalf("lbtest: Advance(%v): negative duration", d)
	}
	target := mock.Now().Add(d)
	for {
		next, ok := nextDeadline(sers)
		if !ok || next.After(target) {
			break
		}
		moveTo(tb, mock, next, sers...)
	}
	moveTo(tb, mock, target, sers...)
}

// nextDeadline returns the earliest pending timer deadline among sers.
func nextDeadline(sers []*lb.Serializer) (time.Time, bool) {
	var next time.Time
	found := false
	for _, s := range sers {
		if d, ok := s.NextDeadline(); ok && (!found || d.Before(next)) {
			next, found = d, true
		}
	}
	return next, found
}

// moveTo moves mock to t (never back) and waits until every serializer in
// sers has nothing due at t.
func moveTo(tb TB, mock *clock.Mock, t time.Time, sers ...*lb.Serializer) {
	tb.Helper()
	if d := t.Sub(mock.Now()); d > 0 {
		mock.Add(d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for _, s := range sers {
		if err := s.WaitIdle(ctx, mock.Now()); err != nil {
			tb.Fatalf("lbtest: waiting for timers due at %v: %v", t, err)
		}
	}
}

// Close closes the balancer as [Harness.CloseBalancer] does, unless it is
// closed, and then the serializer. It is called when the test ends;
// calling it again does nothing.
func (h *Harness) Close() {
	if h.closed {
		return
	}
	h.closed = true
	if err := runAndSettle(h.Serializer, h.closeBalancer); err != nil {
		h.tb.Errorf("lbtest: closing balancer: %v", err)
	}
	h.Serializer.Close()
}

// SubConn returns the i-th SubConn created (from 0), failing the test if
// there is none.
func (h *Harness) SubConn(i int) *SubConn {
	h.tb.Helper()
	scs := h.CC.SubConns()
	if i < 0 || i >= len(scs) {
		h.tb.Fatalf("lbtest: SubConn %d does not exist; %d created", i, len(scs))
	}
	return scs[i]
}

// SubConnFor returns the newest SubConn whose first address is addr,
// failing the test if there is none.
func (h *Harness) SubConnFor(addr string) *SubConn {
	h.tb.Helper()
	scs := h.CC.SubConns()
	for i := len(scs) - 1; i >= 0; i-- {
		if scs[i].addrs[0].Addr == addr {
			return scs[i]
		}
	}
	h.tb.Fatalf("lbtest: no SubConn for %s among the %d created", addr, len(scs))
	return nil
}

// WantEvents fails the test unless the calls recorded since the previous
// TakeEvents (or WantEvents) are exactly want, each written as
// [Event.String] writes it, such as "Connect(SubConn(0: [a:1]))" or
// "UpdateState(READY)".
func (h *Harness) WantEvents(want ...string) {
	h.tb.Helper()
	var got []string
	for _, ev := range h.CC.TakeEvents() {
		got = append(got, ev.String())
	}
	if !slices.Equal(got, want) {
		h.tb.Fatalf("lbtest: events:\n  got  %s\n  want %s", listOrNone(got), listOrNone(want))
	}
}

func listOrNone(ev []string) string {
	if len(ev) == 0 {
		return "(none)"
	}
	return strings.Join(ev, ", ")
}

// State returns the newest published state, failing the test if none was
// published.
func (h *Harness) State() lb.State {
	h.tb.Helper()
	s, ok := h.CC.LastState()
	if !ok {
		h.tb.Fatalf("lbtest: no state published")
	}
	return s
}

// PickErr returns the error of one pick from the last published picker,
// failing the test if the pick returns a SubConn. A pick from an IDLE
// picker may make the balancer leave IDLE.
func (h *Harness) PickErr() error {
	h.tb.Helper()
	r, err := h.State().Picker.Pick(lb.PickInfo{Ctx: context.Background()})
	if err == nil {
		h.tb.Fatalf("Pick returned %v, want an error", r.SubConn)
	}
	return err
}

// WantTransientFailure fails the test unless the last published state is
// TRANSIENT_FAILURE and its picker's error matches [lb.ErrTransientFailure]
// and every one of targets ([errors.Is]).
func (h *Harness) WantTransientFailure(targets ...error) {
	h.tb.Helper()
	if s := h.State(); s.ConnectivityState != lb.TransientFailure {
		h.tb.Fatalf("state %v, want TRANSIENT_FAILURE", s.ConnectivityState)
	}
	err := h.PickErr()
	for _, target := range append(targets, lb.ErrTransientFailure) {
		if !errors.Is(err, target) {
			h.tb.Fatalf("pick error %q does not match %q", err, target)
		}
	}
}

// WantQueue fails the test unless a pick from the last published picker
// queues: its error is [lb.ErrNoSubConnAvailable].
func (h *Harness) WantQueue() {
	h.tb.Helper()
	if err := h.PickErr(); !errors.Is(err, lb.ErrNoSubConnAvailable) {
		h.tb.Fatalf("pick error %v, want ErrNoSubConnAvailable", err)
	}
}

// CountPicks calls p.Pick n times and counts the SubConns returned. It stops
// at the first error and returns it with the counts so far.
func CountPicks(p lb.Picker, n int) (map[lb.SubConn]int, error) {
	counts := make(map[lb.SubConn]int)
	info := lb.PickInfo{Ctx: context.Background()}
	for i := range n {
		r, err := p.Pick(info)
		if err != nil {
			return counts, fmt.Errorf("lbtest: pick %d of %d: %w", i+1, n, err)
		}
		if r.Done != nil {
			r.Done(lb.DoneInfo{})
		}
		counts[r.SubConn]++
	}
	return counts, nil
}
