package grpcgo

import (
	"log/slog"
	"math/rand/v2"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
)

// Option configures a [Builder]: what every balancer it builds gets as its
// clock, logger and random source.
type Option interface{ apply(*options) }

type options struct {
	clock    clock.Clock
	logger   *slog.Logger // nil: conn.DefaultLogger() at each Build
	newRand  func() *rand.Rand
	observer func(*lb.Serializer)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

func newOptions(opts []Option) options {
	o := options{
		clock: clock.New(),
		newRand: func() *rand.Rand {
			return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
		},
	}
	for _, opt := range opts {
		opt.apply(&o)
	}
	return o
}

// WithClock sets the clock that the timers of every balancer built run on
// (priority's failover and deactivation timers, for example). Each balancer
// gets its own [lb.Serializer] on this clock. If this option is not
// supplied, or c is nil, the real clock is used.
func WithClock(c clock.Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithLogger sets the logger of every balancer built (the lbkit policies and
// the bridge itself log there), every level l enables. If this option is
// not supplied, or l is nil, WARN and ERROR records (a policy's warning, a
// config it cannot act on) go to [slog.Default] as it is when grpc-go
// builds the balancer, and INFO and DEBUG records are discarded, as
// conn.New does; WithLogger(slog.New(slog.DiscardHandler)) discards
// everything.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.logger = l
		}
	})
}

// WithRand sets how each balancer gets its random source (address shuffles,
// random schedule starts): newRand is called once per balancer, in Build,
// and the source it returns is used only inside that balancer's serialized
// calls. Return a new *rand.Rand every time: one balancer's source must not
// be shared with another's. If this option is not supplied, or newRand is
// nil, each balancer gets a PCG source seeded at random.
func WithRand(newRand func() *rand.Rand) Option {
	return optionFunc(func(o *options) {
		if newRand != nil {
			o.newRand = newRand
		}
	})
}

// WithSerializerObserver calls f with the [lb.Serializer] of each balancer
// built, in Build, before the lbkit policy is built on it. Tests use it to
// drive a mock clock given with [WithClock] the way package lbtest does:
// advance to [lb.Serializer.NextDeadline], then wait with
// [lb.Serializer.WaitIdle]. f must not call Run or Close on the
// serializer. If this option is not supplied, nothing is called.
func WithSerializerObserver(f func(*lb.Serializer)) Option {
	return optionFunc(func(o *options) { o.observer = f })
}
