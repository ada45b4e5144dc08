package pickfirst

import (
	"fmt"
	"log/slog"
	"math/rand/v2"

	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/draining"
	"github.com/lbkit/lbkit/lb/resolver"
)

// balancer is one pick_first policy instance.
//
// Every field is owned by the tree's serializer: it is read and written only
// inside Balancer methods and SubConn listeners, which run one at a time.
// Pickers never touch it; the IDLE picker only schedules ExitIdle.
type balancer struct {
	cc     lb.ClientConn
	sched  lb.Scheduler
	rand   *rand.Rand
	logger *slog.Logger

	// addrs is the current de-duplicated (and maybe shuffled) address list.
	addrs []resolver.Address
	// subConns holds the live SubConn of each address that has one. Its
	// keys are always a subset of addrs; code that acts on several SubConns
	// walks addrs rather than the map, so the order of calls into the
	// ClientConn is deterministic.
	subConns map[resolver.Address]*subConn
	// seen is scratch space for de-duplicating an update, kept to reuse its
	// buckets. After an update it holds exactly the addresses of addrs.
	seen map[resolver.Address]struct{}

	// state is the last state reported to cc. Before the first report it
	// is IDLE with no addresses, which no path confuses with a real IDLE
	// (that one always has addresses).
	state lb.ConnectivityState
	// selected is the READY SubConn while state is READY, else nil.
	selected *subConn
	// firstPass is true while a pass walks addrs; idx is the position it
	// has reached. Every SubConn of an address before idx has failed in
	// this pass, so the pass is over when idx reaches len(addrs).
	firstPass bool
	idx       int
	// numTF counts failures after the first pass, to refresh the
	// TRANSIENT_FAILURE picker once per len(subConns) failures.
	numTF int
	// lastConnErr is the most recent connection error from any SubConn.
	lastConnErr error

	// Metrics (gRFC A78), resolved at Build.
	attemptsSucceeded, attemptsFailed, disconnections lb.Counter
}

// subConn is the policy's record of one SubConn.
type subConn struct {
	b    *balancer
	sc   lb.SubConn
	addr resolver.Address
	// state is the last state the SubConn reported (IDLE at creation).
	state lb.ConnectivityState
	// removed is set when the policy shuts the SubConn down; the listener
	// ignores everything after.
	removed bool
}

// UpdateClientConnState takes a new address list (and config) from the
// parent. See the package documentation for the rules. It is O(n) in the
// number of addresses.
func (b *balancer) UpdateClientConnState(s lb.ClientConnState) error {
	cfg, err := lb.ConfigOf[Config]("pickfirst", s.BalancerConfig)
	if err != nil {
		b.logger.Error("pickfirst: update ignored", "error", err)
		return err
	}

	addrs := b.dedupe(s.ResolverState.Addresses)
	if cfg.ShuffleAddressList {
		b.rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	}
	addrs = draining.Last(addrs) // tried only when no other address connects
	old := b.addrs
	b.addrs = addrs
	if len(addrs) == 0 {
		b.shutdownAll(old)
		b.selected = nil
		b.firstPass = false
		err := s.ResolverState.Explain(fmt.Errorf("pickfirst: %w", resolver.ErrNoAddresses))
		b.report(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(err)))
		return fmt.Errorf("%w: %w", err, lb.ErrBadResolverState)
	}

	if b.selected != nil {
		if _, ok := b.seen[b.selected.addr]; ok {
			return nil // READY on an address that stays: keep it.
		}
	}
	// Shut down the SubConns of removed addresses, in the old list's order,
	// stopping once every SubConn has been looked at.
	for i, left := 0, len(b.subConns); i < len(old) && left > 0; i++ {
		sd := b.subConns[old[i]]
		if sd == nil {
			continue
		}
		left--
		if _, keep := b.seen[sd.addr]; !keep {
			b.remove(sd)
		}
	}
	hadAddrs := len(old) > 0
	switch {
	case b.state == lb.Idle && hadAddrs:
		// The connection was lost and nobody asked to reconnect yet: stay
		// IDLE; leaving IDLE starts the pass over the new list.
	case b.state == lb.TransientFailure && hadAddrs:
		// Sticky TRANSIENT_FAILURE: keep reporting it while a new pass runs.
		b.startFirstPass()
	default:
		// The first addresses, recovery from a non-sticky failure, a pass
		// that restarts, or the READY address was removed (grpc-go's
		// choice; see docs/choices.md).
		b.selected = nil
		if b.state != lb.Connecting {
			b.report(lb.Connecting, lb.NewQueuePicker())
		}
		b.startFirstPass()
	}
	return nil
}

// dedupe returns a new slice with the first occurrence of each address of
// in, in order, and leaves exactly those addresses in b.seen.
func (b *balancer) dedupe(in []resolver.Address) []resolver.Address {
	clear(b.seen)
	out := make([]resolver.Address, 0, len(in))
	for _, a := range in {
		n := len(b.seen)
		b.seen[a] = struct{}{} // one hash per address: a duplicate leaves len as it was
		if len(b.seen) > n {
			out = append(out, a)
		}
	}
	return out
}

// ResolverError handles a failed resolution: reported as TRANSIENT_FAILURE
// when there is no address to use, used to refresh the picker's error when
// already in TRANSIENT_FAILURE, and otherwise ignored.
func (b *balancer) ResolverError(err error) {
	switch {
	case len(b.addrs) == 0:
		err = fmt.Errorf("pickfirst: name resolver error: %w", err)
	case b.state != lb.TransientFailure:
		b.logger.Debug("pickfirst: resolver error ignored", "state", b.state, "error", err)
		return
	case b.lastConnErr != nil:
		err = fmt.Errorf("pickfirst: name resolver error: %w; last connection error: %w", err, b.lastConnErr)
	default:
		err = fmt.Errorf("pickfirst: name resolver error: %w", err)
	}
	b.report(lb.TransientFailure, lb.NewErrPicker(lb.TransientFailureError(err)))
}

// ExitIdle leaves IDLE: it reports CONNECTING at once and starts a pass from
// the first address. In any other state it does nothing.
func (b *balancer) ExitIdle() {
	if b.state != lb.Idle || len(b.addrs) == 0 {
		return
	}
	b.report(lb.Connecting, lb.NewQueuePicker())
	b.startFirstPass()
}

// Close shuts down every SubConn.
func (b *balancer) Close() {
	b.shutdownAll(b.addrs)
	b.selected = nil
	b.firstPass = false
}

// report publishes a state and picker.
func (b *balancer) report(s lb.ConnectivityState, p lb.Picker) {
	if b.state != s {
		b.logger.Debug("pickfirst: state change", "from", b.state, "to", s)
	}
	b.state = s
	b.cc.UpdateState(lb.State{ConnectivityState: s, Picker: p})
}

// shutdownAll shuts down every SubConn, walking addrs (which must hold every
// key of b.subConns).
func (b *balancer) shutdownAll(addrs []resolver.Address) {
	for _, a := range addrs {
		if sd := b.subConns[a]; sd != nil {
			b.remove(sd)
		}
	}
}

// remove shuts sd down and forgets it.
func (b *balancer) remove(sd *subConn) {
	sd.removed = true
	delete(b.subConns, sd.addr)
	sd.sc.Shutdown()
}

// Describe returns the node with one endpoint per address that has a
// SubConn, in address order; LastError is the last connection error.
func (b *balancer) Describe() lb.Node {
	n := lb.Node{Policy: Name, LastError: lb.ErrorString(b.lastConnErr)}
	for _, a := range b.addrs {
		if sd := b.subConns[a]; sd != nil {
			n.Endpoints = append(n.Endpoints, lb.Endpoint{Address: a.Addr, State: sd.state, SubConn: sd.sc})
		}
	}
	return n
}
