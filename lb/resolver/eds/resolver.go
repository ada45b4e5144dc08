package eds

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/resolver"
)

// resolverConfig is what Build hands to a new fileResolver.
type resolverConfig struct {
	file   string
	cfg    config
	cc     resolver.ClientConn
	clock  clock.Clock
	logger *slog.Logger
}

// fileResolver watches one file on its own goroutine, run. The fields of
// resolverConfig and the channels are set by start and read-only
// afterwards. The fields below "owned by run" are touched by run only, so
// they need no lock; run is also the only caller of the ClientConn.
type fileResolver struct {
	resolverConfig

	// resolveNow holds at most one pending ResolveNow request, so requests
	// made during a read coalesce into the next one.
	resolveNow chan struct{}
	ctx        context.Context // cancelled by Close
	cancel     context.CancelFunc
	done       chan struct{} // closed when run returns

	// Owned by run.
	namer    Namer
	seen     [sha256.Size]byte // hash of the last content processed
	seenAny  bool              // seen is set
	readErr  string            // text of the last read error reported; "" if the last read worked
	accepted *resolver.State   // the last state the channel accepted; nil if none
}

func start(rc resolverConfig) *fileResolver {
	ctx, cancel := context.WithCancel(context.Background())
	r := &fileResolver{
		resolverConfig: rc,
		resolveNow:     make(chan struct{}, 1),
		ctx:            ctx,
		cancel:         cancel,
		done:           make(chan struct{}),
	}
	go r.run()
	return r
}

// ResolveNow asks for the file to be read at once. It never blocks.
func (r *fileResolver) ResolveNow() {
	select {
	case r.resolveNow <- struct{}{}:
	default: // one is pending already
	}
}

// Close stops polling and waits for the goroutine to end. A read in
// progress finishes first; nothing is reported after Close returns.
func (r *fileResolver) Close() {
	r.cancel()
	<-r.done
}

// run reads the file, then waits for the poll interval or ResolveNow, until
// Close.
//
// The time of the next poll is taken before the ClientConn is called, so
// an observer of that call (a test advancing a mock clock) sees a deadline
// that no longer moves: if the clock passes it before the timer is made,
// the next read starts at once.
func (r *fileResolver) run() {
	defer close(r.done)
	forced := true // the first read always reports
	for {
		next := r.clock.Now().Add(r.cfg.pollInterval)
		r.poll(forced)
		var ok bool
		forced, ok = r.wait(next)
		if !ok {
			return
		}
	}
}

// wait waits until next or a ResolveNow request. It reports whether the
// wake-up was a ResolveNow, and false in ok if the resolver was closed.
// It makes a fresh timer each time: a mock clock's Timer must not be
// Reset after it fired undrained.
func (r *fileResolver) wait(next time.Time) (resolveNow, ok bool) {
	if r.ctx.Err() != nil {
		return false, false
	}
	d := next.Sub(r.clock.Now())
	if d <= 0 {
		return false, true
	}
	timer := r.clock.Timer(d)
	defer timer.Stop()
	select {
	case <-r.ctx.Done():
		return false, false
	case <-r.resolveNow:
		return true, true
	case <-timer.C:
		return false, true
	}
}

// poll reads the file and reports what changed. forced is true for the
// first read and for reads asked by ResolveNow: those process the content
// even when it is the same as last time, report read errors even when
// they are the same as last time, and re-publish a state the channel
// rejected.
func (r *fileResolver) poll(forced bool) {
	data, err := r.cfg.readFile(r.file)
	if r.ctx.Err() != nil {
		return // closed: report nothing
	}
	if err != nil {
		msg := err.Error()
		if forced || msg != r.readErr {
			r.readErr = msg
			r.logger.Warn("eds: cannot read the file; keeping the last good state", "error", err)
			r.cc.ReportError(fmt.Errorf("eds: reading %s: %w", r.file, err))
		}
		return
	}
	r.readErr = ""
	sum := sha256.Sum256(data)
	if !forced && r.seenAny && sum == r.seen {
		return // unchanged
	}
	r.seen, r.seenAny = sum, true

	cla, err := parse(data)
	if err != nil {
		r.report(err)
		return
	}
	saved := r.namer.clone()
	st, err := r.namer.state(cla)
	if err != nil {
		r.namer = *saved
		r.report(err)
		return
	}
	if r.accepted != nil && sameState(*r.accepted, st) {
		r.logger.Debug("eds: file changed but the state did not; nothing to publish")
		return
	}
	if len(st.Addresses) == 0 {
		r.logger.Warn("eds: the assignment has no usable endpoint (localities without load_balancing_weight and endpoints not UNKNOWN or HEALTHY are left out); publishing an empty state", "cluster", cla.ClusterName)
	}
	if err := r.cc.UpdateState(st); err != nil {
		r.namer = *saved
		r.logger.Warn("eds: the channel rejected the state; it is published again on the next change or ResolveNow", "error", err)
		return
	}
	r.accepted = &st
	r.logger.Debug("eds: published", "cluster", cla.ClusterName, "addresses", len(st.Addresses))
}

// report reports an invalid assignment to the channel.
func (r *fileResolver) report(err error) {
	r.logger.Warn("eds: invalid assignment; keeping the last good state", "error", err)
	r.cc.ReportError(fmt.Errorf("eds: file %s: %w", r.file, err))
}

// sameState reports whether a and b publish the same thing.
func sameState(a, b resolver.State) bool {
	return slices.Equal(a.Addresses, b.Addresses) && string(a.ServiceConfig) == string(b.ServiceConfig) && a.Attributes == b.Attributes
}
