package childmanager

import (
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lbkit/lbkit/internal/option"
	"github.com/lbkit/lbkit/lb"
)

// DefaultDeactivationDelay is how long a deactivated child lives before it
// is removed, unless [WithDeactivationDelay] sets another delay: the
// 15 minutes of gRFC A56, "Child Lifetime Management".
const DefaultDeactivationDelay = 15 * time.Minute

// Option configures a [Manager].
type Option interface{ apply(*config) }

type config struct {
	deactivationDelay time.Duration
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithDeactivationDelay sets how long a child lives after [Child.Deactivate]
// before it is removed. If this option is not supplied, or d is negative,
// the delay is [DefaultDeactivationDelay]. A delay of 0 removes the child as
// soon as the tree's serializer runs the timer.
func WithDeactivationDelay(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d >= 0 {
			c.deactivationDelay = d
		}
	})
}

// Hooks are the owner's callbacks. They run inside the tree's serialized
// calls, possibly re-entrantly from a method the owner called (see the
// package documentation).
type Hooks[T any] struct {
	// StateChanged is called each time c.State() changes: when the child's
	// balancer publishes a state, and when a policy change resets the
	// child to its initial state. It must not be nil.
	StateChanged func(c *Child[T])
	// Removed, when not nil, is called once for each child that leaves
	// the manager ([Child.Remove], the deactivation timer, or
	// [Manager.Close]), after its balancer is closed. Owners release what
	// they attached to the child here.
	Removed func(c *Child[T])
}

// Manager holds the named children of one multi-child policy. T is the
// owner's per-child state, kept in [Child.Data].
//
// A Manager is not safe for concurrent use: like the policy that owns it,
// it is used only inside the tree's serialized calls. Close is its last
// call.
type Manager[T any] struct {
	cc     lb.ClientConn
	opts   lb.BuildOptions
	logger *slog.Logger
	hooks  Hooks[T]
	delay  time.Duration

	children map[string]*Child[T]
}

// New returns a Manager whose children report to cc (the owner's own
// ClientConn) and are built with opts, the owner's BuildOptions, so the
// whole tree shares one scheduler and clock. hooks.StateChanged must not be
// nil.
func New[T any](cc lb.ClientConn, opts lb.BuildOptions, hooks Hooks[T], options ...Option) *Manager[T] {
	if hooks.StateChanged == nil {
		panic("childmanager: New: Hooks.StateChanged is nil")
	}
	option.MustNotBeNil("childmanager.New", options)
	cfg := config{deactivationDelay: DefaultDeactivationDelay}
	for _, o := range options {
		o.apply(&cfg)
	}
	opts = opts.WithDefaults()
	return &Manager[T]{
		cc:       cc,
		opts:     opts,
		logger:   opts.Logger,
		hooks:    hooks,
		delay:    cfg.deactivationDelay,
		children: make(map[string]*Child[T]),
	}
}

// Add creates the child called name, active, with no balancer built yet, in
// the initial state (CONNECTING with a picker that queues requests, as the
// child has not published anything). Its first [Child.Update] builds its
// policy. If a child called name exists, Add returns it unchanged.
func (m *Manager[T]) Add(name string) *Child[T] {
	if c, ok := m.children[name]; ok {
		return c
	}
	c := &Child[T]{m: m, name: name, state: initialState(), scope: lb.NewScope(m.opts.Scheduler)}
	m.children[name] = c
	m.logger.Debug("childmanager: child added", "child_name", name)
	return c
}

// Get returns the child called name, or nil if there is none.
func (m *Manager[T]) Get(name string) *Child[T] { return m.children[name] }

// Len returns the number of children, active or not.
func (m *Manager[T]) Len() int { return len(m.children) }

// Children returns every child, active or not, sorted by name.
func (m *Manager[T]) Children() []*Child[T] {
	out := slices.Collect(maps.Values(m.children))
	slices.SortFunc(out, func(a, b *Child[T]) int { return strings.Compare(a.name, b.name) })
	return out
}

// ResolverError passes err to every child whose balancer is built, in name
// order.
func (m *Manager[T]) ResolverError(err error) {
	for _, c := range m.Children() {
		c.ResolverError(err)
	}
}

// Close removes every child, in name order (see [Child.Remove]), which
// ends every timer of the manager. The owner calls it from its own Close,
// after which nothing calls the owner (see [lb.Scope]), so nothing calls
// the manager either.
func (m *Manager[T]) Close() {
	for _, c := range m.Children() {
		c.Remove()
	}
}

// initialState is a child's state before its balancer publishes one, as
// grpc-go and C-core start a child: CONNECTING, queueing requests.
func initialState() lb.State {
	return lb.State{ConnectivityState: lb.Connecting, Picker: lb.NewQueuePicker()}
}

// errNilPicker is the cause given to a child's state published without a
// picker, which the lb contract forbids.
var errNilPicker = errors.New("childmanager: child published a state without a picker")
