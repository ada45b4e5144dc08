package outlierdetection

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/childmanager"
	"github.com/lbkit/lbkit/lb/resolver"
)

// entry is A50's map entry for one address.
type entry struct {
	addr    string
	counter *callCounter
	// ejected is set while the address is ejected, since ejectedAt (the
	// start of the sweep that ejected it).
	ejected   bool
	ejectedAt time.Time
	// multiplier is the ejection time multiplier.
	multiplier int64
	// subConns are the wrappers whose single address is addr, in
	// creation order (so ejections reach the child in a stable order).
	subConns []*subConn
}

// childName is the name of the policy's one child in its child manager.
const childName = "child"

// odBalancer is the outlier_detection_experimental policy.
//
// Every method, SubConn listener, child hook and timer callback runs inside
// the tree's serialized calls, so nothing is locked; only the call
// counters, which pickers update, are atomic.
type odBalancer struct {
	cc     lb.ClientConn
	opts   lb.BuildOptions
	logger *slog.Logger

	children *childmanager.Manager[struct{}]
	child    *childmanager.Child[struct{}]

	// cfg is the latest config; nil before the first update.
	cfg *Config
	// entries maps an address to its entry; order lists the entries in
	// the order of the latest address list, the order sweeps visit them.
	entries map[string]*entry
	order   []*entry
	// subConns holds every live wrapper, in creation order.
	subConns []*subConn

	// timer is the pending sweep, nil when none; timerStart is when the
	// running interval started, zero when no timer runs.
	timer      lb.Timer
	timerStart time.Time

	// updating is set while UpdateClientConnState reaches the child,
	// which publishes once at its end.
	updating bool

	// cannotEject says, per algorithm, why it cannot eject now (shown in
	// Describe); warnedEject, which kinds of reason were logged, each once
	// in the policy's life.
	cannotEject [algCount]ejectBlock
	warnedEject [algCount][tooFewVolumes + 1]bool

	// ejections and unejections count ([MetricEjections],
	// [MetricUnejections]).
	ejections, unejections lb.Counter
}

// Build returns a new outlier detection balancer reporting to cc; its
// child shares opts.
func (policy) Build(cc lb.ClientConn, opts lb.BuildOptions) lb.Balancer {
	b := &odBalancer{
		cc:      cc,
		opts:    opts,
		logger:  opts.PolicyLogger(Name),
		entries: make(map[string]*entry),

		ejections:   opts.Metrics.Counter(MetricEjections, cc.Target()),
		unejections: opts.Metrics.Counter(MetricUnejections, cc.Target()),
	}
	b.children = childmanager.New[struct{}](wrapCC{b}, opts, childmanager.Hooks[struct{}]{
		StateChanged: func(*childmanager.Child[struct{}]) {
			if !b.updating {
				b.publish()
			}
		},
	})
	b.child = b.children.Add(childName)
	return b
}

// UpdateClientConnState applies a config and addresses, in A50's order:
// the address map gets an entry for each address in the list and loses the
// others, the sweep timer follows the config (see applyTimer), and then
// the child receives the addresses and its config. The policy publishes
// once at the end; the child's error is returned.
func (b *odBalancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*Config)
	if !ok || cfg == nil {
		return fmt.Errorf("outlierdetection: got config %T, want a non-nil *outlierdetection.Config", s.BalancerConfig)
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	b.cfg = cfg
	b.updateEntries(s.ResolverState.Addresses)
	b.checkHosts()
	b.applyTimer()
	b.updating = true
	err := b.child.Update(cfg.ChildPolicy, s.ResolverState)
	b.updating = false
	b.publish()
	return err
}

// updateEntries makes the address map match addrs (by Addr, ignoring
// attributes): new addresses get a fresh entry, to which existing wrappers
// of that address are attached; entries of addresses no longer listed are
// removed and their wrappers, no longer watched, un-ejected.
func (b *odBalancer) updateEntries(addrs []resolver.Address) {
	listed := make(map[string]*entry, len(addrs))
	order := make([]*entry, 0, len(addrs))
	for _, a := range addrs {
		if _, dup := listed[a.Addr]; dup {
			continue
		}
		e := b.entries[a.Addr]
		if e == nil {
			e = &entry{addr: a.Addr, counter: newCallCounter()}
		}
		listed[a.Addr] = e
		order = append(order, e)
	}
	for addr, e := range b.entries {
		if listed[addr] == nil {
			for _, w := range slices.Clone(e.subConns) {
				w.attach(nil)
			}
		}
	}
	b.entries, b.order = listed, order
	for _, w := range b.subConns {
		if w.entry == nil && w.addr != "" && b.entries[w.addr] != nil {
			w.attach(b.entries[w.addr])
		}
	}
}

// applyTimer applies A50's rule for the sweep timer on a new config. With
// an algorithm configured: if no timer runs, one starts now for a full
// interval and every call counter is reset; if one runs, it is restarted
// for what remains of the new interval since the running interval
// started (at once if nothing remains). With no algorithm: the timer stops,
// every address is un-ejected and every multiplier reset.
func (b *odBalancer) applyTimer() {
	now := b.opts.Clock.Now()
	if !b.cfg.enabled() {
		b.stopTimer()
		b.timerStart = time.Time{}
		for _, e := range b.order {
			b.uneject(e)
			e.multiplier = 0
		}
		return
	}
	if b.timerStart.IsZero() {
		b.timerStart = now
		for _, e := range b.order {
			e.counter.reset()
		}
		b.startTimer(b.cfg.Interval)
		return
	}
	b.stopTimer()
	b.startTimer(max(b.cfg.Interval-now.Sub(b.timerStart), 0))
}

func (b *odBalancer) startTimer(d time.Duration) {
	b.timer = b.opts.Scheduler.AfterFunc(d, b.sweep)
}

func (b *odBalancer) stopTimer() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}

// ResolverError passes err to the child.
func (b *odBalancer) ResolverError(err error) { b.child.ResolverError(err) }

// ExitIdle passes the request to the child.
func (b *odBalancer) ExitIdle() { b.child.ExitIdle() }

// Close closes the child, whose SubConns shut down. The sweep timer ends
// with the policy's scope (see [lb.Scope]).
func (b *odBalancer) Close() { b.children.Close() }

// publish reports the child's state with a picker wrapping the child's,
// counting calls when an algorithm is configured.
func (b *odBalancer) publish() {
	s := b.child.State()
	counting := b.cfg != nil && b.cfg.enabled()
	b.cc.UpdateState(lb.State{ConnectivityState: s.ConnectivityState, Picker: &picker{child: s.Picker, counting: counting}})
}

// newSubConn creates a real SubConn for the child and returns its wrapper,
// listed in its address's entry when there is one. A wrapper made for an
// ejected address starts ejected: the child hears TRANSIENT_FAILURE right
// after NewSubConn returns (from a scheduled call, so its listener never
// runs before it has the SubConn).
func (b *odBalancer) newSubConn(addrs []resolver.Address, opts lb.NewSubConnOptions) (lb.SubConn, error) {
	w := newSubConn(b, addrs, opts.StateListener)
	sc, err := b.cc.NewSubConn(addrs, lb.NewSubConnOptions{StateListener: w.stateChanged, HealthCheck: opts.HealthCheck})
	if err != nil {
		return nil, err
	}
	w.SubConn = sc
	b.subConns = append(b.subConns, w)
	if e := b.entries[w.addr]; w.addr != "" && e != nil {
		w.entry = e
		e.subConns = append(e.subConns, w)
		w.counter.Store(e.counter)
		if e.ejected {
			w.ejected = true
			b.opts.Scheduler.Schedule(func() {
				if w.ejected && !w.shutdown {
					w.listener(lb.SubConnState{ConnectivityState: lb.TransientFailure, ConnectionError: errEjected})
				}
			})
		}
	}
	return w, nil
}

// wrapCC is the ClientConn the child manager gives the child: NewSubConn
// wraps; the rest goes to the parent.
type wrapCC struct{ b *odBalancer }

func (c wrapCC) NewSubConn(addrs []resolver.Address, opts lb.NewSubConnOptions) (lb.SubConn, error) {
	return c.b.newSubConn(addrs, opts)
}
func (c wrapCC) UpdateState(s lb.State) { c.b.cc.UpdateState(s) }
func (c wrapCC) ResolveNow()            { c.b.cc.ResolveNow() }
func (c wrapCC) Target() string         { return c.b.cc.Target() }

// Describe returns the outlier_detection node with its child's: each of the
// child's endpoints (at any depth) is marked ejected while its address is,
// and shows the real SubConn rather than this policy's wrapper.
func (b *odBalancer) Describe() lb.Node {
	n := lb.Node{Policy: Name, Warning: b.ejectWarning()}
	if b.child != nil {
		cn := b.child.Describe()
		b.markEjected(&cn)
		n.Children = []lb.Node{cn}
	}
	return n
}

func (b *odBalancer) markEjected(n *lb.Node) {
	for i := range n.Endpoints {
		e := &n.Endpoints[i]
		if w, ok := e.SubConn.(*subConn); ok {
			e.SubConn = w.SubConn
			e.Ejected = w.ejected
			if w.ejected && w.entry != nil && w.entry.ejected {
				since, until := w.entry.ejectedAt, b.ejectionEnd(w.entry)
				e.StateSince, e.EjectedUntil = &since, &until
			}
		}
	}
	for i := range n.Children {
		b.markEjected(&n.Children[i])
	}
}
