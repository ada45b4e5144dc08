package eds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/internal/runloop"
)

// resolverConfig is what Build hands to a new fileResolver.
type resolverConfig struct {
	file   string
	cfg    config
	cc     resolver.ClientConn
	clock  clock.Clock
	logger *slog.Logger
}

// fileResolver watches one file from the goroutine of its [runloop.Loop].
// The fields of resolverConfig are set by start and read-only afterwards.
// The fields below "owned by run" are touched by run only, so they need no
// lock; run is also the only caller of the ClientConn.
type fileResolver struct {
	resolverConfig
	loop *runloop.Loop

	// Owned by run.
	namer    Namer
	seen     [sha256.Size]byte // hash of the last content processed
	seenAny  bool              // seen is set
	readErr  string            // text of the last read error reported; "" if the last read worked
	accepted *resolver.State   // the last state the channel accepted; nil if none

	// contentProblem is what is wrong with the content in use (invalid,
	// or an empty tree); nil when nothing is. Owned by run.
	contentProblem error
	// desc is what Describe returns, replaced by run after each read.
	desc atomic.Pointer[resolver.Description]
}

// Describe says which file the resolver reads, the hash of the content in
// use, the addresses published and the problem that stands, if any (a
// read or parse error, an empty tree). It is safe for concurrent use.
func (r *fileResolver) Describe() resolver.Description {
	if d := r.desc.Load(); d != nil {
		return *d
	}
	return resolver.Description{Facts: []resolver.Fact{{Name: "file", Value: r.file}}}
}

// describe records what Describe returns after a read of content whose
// problem is problem (nil for none). Run only.
func (r *fileResolver) describe(problem error) {
	r.contentProblem = problem
	r.describeWith(problem)
}

// describeWith records what Describe returns with problem as the one that
// stands, leaving contentProblem alone (a read error). Run only.
func (r *fileResolver) describeWith(problem error) {
	d := resolver.Description{Facts: []resolver.Fact{
		{Name: "file", Value: r.file},
		{Name: "poll interval", Value: r.cfg.pollInterval.String()},
	}}
	if r.seenAny {
		d.Facts = append(d.Facts, resolver.Fact{Name: "content SHA-256", Value: hex.EncodeToString(r.seen[:8])})
	}
	if r.accepted != nil {
		d.Facts = append(d.Facts, resolver.Fact{Name: "addresses published", Value: strconv.Itoa(len(r.accepted.Addresses))})
	}
	if problem != nil {
		d.LastError = problem.Error()
	}
	r.desc.Store(&d)
}

func start(rc resolverConfig) *fileResolver {
	r := &fileResolver{resolverConfig: rc}
	r.loop = runloop.Start(rc.clock, r.run)
	return r
}

// ResolveNow asks for the file to be read at once. It never blocks;
// requests made during a read coalesce into the next one.
func (r *fileResolver) ResolveNow() { r.loop.ResolveNow() }

// Close stops polling and returns promptly: it does not wait for a read in
// progress (a FIFO, a hung network mount), which is left to finish on its
// own and whose result is dropped. Nothing is reported after Close returns.
func (r *fileResolver) Close() { r.loop.Close() }

// run reads the file, then waits for the poll interval or ResolveNow, until
// Close.
//
// The timer of the next poll is made before the read, in one clock
// operation, so an observer of the read (a test advancing a mock clock)
// sees a deadline that no longer moves; a read that outlasts the interval
// is followed by the next one at once.
func (r *fileResolver) run(l *runloop.Loop) {
	forced := true // the first read always reports
	for {
		next := l.Timer(r.cfg.pollInterval)
		if !r.poll(l, forced) {
			next.Stop()
			return
		}
		switch l.Wait(next) {
		case runloop.Closed:
			return
		case runloop.Requested:
			forced = true
		default:
			forced = false
		}
	}
}

// readResult is what one read returns.
type readResult struct {
	data []byte
	err  error
}

// poll reads the file and reports what changed. forced is true for the
// first read and for reads asked by ResolveNow: those process the content
// even when it is the same as last time, report read errors even when
// they are the same as last time, and re-publish a state the channel
// rejected.
//
// It reports false, having reported nothing, when the resolver was closed
// during the read.
func (r *fileResolver) poll(l *runloop.Loop, forced bool) bool {
	res, ok := runloop.Do(l, func(context.Context) readResult {
		data, err := r.cfg.read(r.file)
		return readResult{data, err}
	})
	if !ok {
		return false // closed: report nothing
	}
	r.process(res.data, res.err, forced)
	return true
}

// process reports what one read found.
func (r *fileResolver) process(data []byte, err error, forced bool) {
	if err != nil {
		msg := err.Error()
		if forced || msg != r.readErr {
			r.readErr = msg
			r.describeWith(fmt.Errorf("eds: reading %s: %w", r.file, err))
			r.logger.Warn("eds: cannot read the file; keeping the last good state", "error", err)
			r.cc.ReportError(fmt.Errorf("eds: reading %s: %w", r.file, err))
		}
		return
	}
	if r.readErr != "" {
		r.readErr = ""
		r.describeWith(r.contentProblem) // the read error no longer stands
	}
	sum := sha256.Sum256(data)
	if !forced && r.seenAny && sum == r.seen {
		return // unchanged
	}
	r.seen, r.seenAny = sum, true

	cla, err := r.cfg.parse.parse(data)
	if err != nil {
		r.report(err)
		return
	}
	saved := r.namer.clone()
	st, dropped, err := r.namer.stateAndDrops(cla, Policies{})
	if err != nil {
		r.namer = *saved
		r.report(err)
		return
	}
	if len(st.Addresses) == 0 {
		// The reason travels with the state: the priority policy fails
		// picks with it beside its "empty priority list" from the first
		// picker it publishes for this state.
		st.Degraded = fmt.Errorf("eds: file %s: %w", r.file, dropped.emptyTree())
	}
	if r.accepted != nil && resolver.SameState(*r.accepted, st) {
		r.logger.Debug("eds: file changed but the state did not; nothing to publish")
		r.describe(nil)
		return
	}
	if len(dropped.localities) > 0 || dropped.unusable > 0 {
		// Once per distinct content: unchanged content is not parsed again.
		r.logger.Warn("eds: parts of the assignment are left out of the tree", "cluster", cla.ClusterName,
			"localities", dropped.localities, "empty_priorities", dropped.priorities, "endpoints_not_healthy", dropped.unusable)
	}
	if st.Degraded != nil {
		r.logger.Warn("eds: the assignment has no usable endpoint; publishing an empty state", "cluster", cla.ClusterName, "reason", dropped.emptyTree())
	}
	// Describe shows the new state before the channel hears of it, so
	// that whoever sees the update sees its description. Its reason is
	// not among the problems described: the channel's snapshot shows it
	// as the tree applies it (resolver.Description.LastError).
	prev := r.accepted
	r.accepted = &st
	r.describe(nil)
	if err := r.cc.UpdateState(st); err != nil {
		r.namer, r.accepted = *saved, prev
		r.logger.Warn("eds: the channel rejected the state; it is published again on the next change or ResolveNow", "error", err)
		r.describeWith(fmt.Errorf("eds: the channel rejected the state: %w", err))
		return
	}
	r.logger.Debug("eds: published", "cluster", cla.ClusterName, "addresses", len(st.Addresses))
}

// report reports an invalid assignment to the channel.
func (r *fileResolver) report(err error) {
	r.logger.Warn("eds: invalid assignment; keeping the last good state", "error", err)
	err = fmt.Errorf("eds: file %s: %w", r.file, err)
	r.describe(err)
	r.cc.ReportError(err)
}
