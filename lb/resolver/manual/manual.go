package manual

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lbkit/lbkit/internal/option"
	"github.com/lbkit/lbkit/lb/resolver"
)

// ErrClosed is wrapped by [Builder.UpdateState] when the resolver it built
// last has been closed and no new one is attached. The state is still kept
// and delivered by the next Build.
var ErrClosed = errors.New("manual: resolver closed")

// Option configures a [Builder].
type Option interface{ apply(*Builder) }

type optionFunc func(*Builder)

func (f optionFunc) apply(b *Builder) { f(b) }

// WithInitialState sets the state the first Build delivers when nothing was
// pushed before it. By default there is none, and Build delivers nothing
// until the first [Builder.UpdateState].
func WithInitialState(s resolver.State) Option {
	s = cloneState(s)
	return optionFunc(func(b *Builder) { b.state = &s })
}

// WithResolveNowFunc sets f to be called on every ResolveNow of a resolver
// from this builder, after [Builder.ResolveNowCount] is incremented. f runs
// synchronously inside ResolveNow, which must not block, so f must not
// block either: to push a state in response, call UpdateState from a new
// goroutine. By default nothing is called.
func WithResolveNowFunc(f func()) Option {
	return optionFunc(func(b *Builder) { b.onResolveNow = f })
}

// Builder builds manual resolvers and receives the states to publish. Create
// it with [NewBuilder]. It is safe for concurrent use; see the package
// documentation for the lifecycle.
type Builder struct {
	// Set at creation, then read-only.
	scheme       string
	onResolveNow func()

	resolveNows atomic.Uint64

	// mu guards the fields below. It is also held while calling a
	// ClientConn, so the ClientConn sees pushes in order and nothing reaches
	// it after Close returns.
	mu      sync.Mutex
	state   *resolver.State // latest pushed state; nil if none yet
	err     error           // error reported with no resolver attached, after state; nil if none
	current *manualResolver // attached resolver; nil before Build and after Close
	built   bool            // Build was called at least once
}

var _ resolver.Builder = (*Builder)(nil)

// NewBuilder returns a builder for scheme. Scheme returns scheme unchanged,
// so write it in lower case, as [resolver.Builder] requires.
func NewBuilder(scheme string, opts ...Option) *Builder {
	option.MustNotBeNil("manual.NewBuilder", opts)
	b := &Builder{scheme: scheme}
	for _, o := range opts {
		o.apply(b)
	}
	return b
}

// Scheme returns the scheme given to [NewBuilder].
func (b *Builder) Scheme() string { return b.scheme }

// Build attaches a new resolver reporting to cc, detaching any earlier one,
// and delivers the latest state to cc before it returns, if there is one,
// then an error reported while no resolver was attached, if there is one.
// It never fails; target and opts are not used. An error from
// cc.UpdateState during Build is dropped: the builder cannot report it, and
// the channel already knows.
func (b *Builder) Build(_ resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	r := &manualResolver{b: b, cc: cc}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.current = r
	b.built = true
	if st := b.state; st != nil {
		_ = cc.UpdateState(cloneState(*st))
	}
	if b.err != nil {
		cc.ReportError(b.err)
		b.err = nil
	}
	return r, nil
}

// UpdateState makes s the latest state and delivers it to the attached
// resolver's ClientConn, returning that ClientConn's error wrapped. With no
// resolver attached it keeps s for the next Build and returns nil before the
// first Build, or an error wrapping [ErrClosed] after a Close. s is copied;
// the caller may reuse it.
func (b *Builder) UpdateState(s resolver.State) error {
	s = cloneState(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.err = &s, nil // a newer state supersedes a kept error
	r := b.current
	if r == nil {
		if b.built {
			return fmt.Errorf("manual: scheme %q: state kept for the next Build: %w", b.scheme, ErrClosed)
		}
		return nil
	}
	if err := r.cc.UpdateState(cloneState(s)); err != nil {
		return fmt.Errorf("manual: scheme %q: channel rejected the state: %w", b.scheme, err)
	}
	return nil
}

// ReportError reports err to the attached resolver's ClientConn. With no
// resolver attached it keeps err for the next Build, which reports it after
// the latest state, unless a state is pushed first (a newer state
// supersedes it).
func (b *Builder) ReportError(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.current; r != nil {
		r.cc.ReportError(err)
		return
	}
	b.err = err
}

// ResolveNowCount returns how many times ResolveNow has been called on the
// resolvers built by b, attached or not.
func (b *Builder) ResolveNowCount() uint64 { return b.resolveNows.Load() }

// manualResolver is one resolver built by a Builder. Its cc is read-only.
type manualResolver struct {
	b  *Builder
	cc resolver.ClientConn
}

// ResolveNow counts the call and runs the builder's hook, if any.
func (r *manualResolver) ResolveNow() {
	r.b.resolveNows.Add(1)
	if f := r.b.onResolveNow; f != nil {
		f()
	}
}

// Close detaches r if it is still attached. When Close returns, no call to
// r's ClientConn is in progress or will happen.
func (r *manualResolver) Close() {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.current == r {
		b.current = nil
	}
}

func cloneState(s resolver.State) resolver.State {
	s.Addresses = slices.Clone(s.Addresses)
	s.ServiceConfig = bytes.Clone(s.ServiceConfig)
	return s
}
