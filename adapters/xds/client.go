package xds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/lbkit/lbkit/lb/backoff"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// The type URLs of the resources lbkit subscribes to.
const (
	ClusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	EndpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// DefaultResourceTimeout is how long a subscribed resource may go unsent
// on a live stream before it counts as not existing: gRPC's 15 seconds.
const DefaultResourceTimeout = 15 * time.Second

// resourceType says how to read one type of resource.
type resourceType struct {
	url string
	// kind names the resource in errors ("cluster", "endpoints").
	kind string
	// decode returns the resource's name and its parsed value, or why it
	// is invalid (with its name when it could be read).
	decode func(raw []byte) (name string, value any, err error)
	// wholeSet is true for the types whose state-of-the-world responses
	// carry every subscribed resource (CDS), so that a subscribed
	// resource missing from a response no longer exists.
	wholeSet bool
}

// watcher receives what happens to one subscribed resource. Its methods
// run one at a time, in order, on the client's callback goroutine.
type watcher interface {
	// update gives the resource's new valid value.
	update(value any)
	// failed reports an error that leaves the last value (if any) in use:
	// the resource was NACKed, or the stream failed.
	failed(err error)
	// missing reports that the resource does not exist.
	missing()
}

// clientConfig is what a client is made with.
type clientConfig struct {
	server          Server
	node            *corev3.Node
	dialOptions     []grpc.DialOption
	clock           clock.Clock
	logger          *slog.Logger
	backoff         backoff.Config
	resourceTimeout time.Duration
	seed            uint64
}

// client is one ADS stream to one management server, shared by every
// resolver of a [Builder] that uses that server. It keeps the last valid
// value of every subscribed resource across stream failures, so resolvers
// keep serving while it reconnects with backoff (gRFC A57).
//
// Its methods are safe for concurrent use. Watcher callbacks run on one
// goroutine of the client's, in the order the client saw the events.
type client struct {
	cfg    clientConfig
	cancel context.CancelFunc
	done   chan struct{} // closed when the stream loop has ended
	queue  *callbackQueue
	wake   chan struct{} // capacity 1: requests are pending

	mu    sync.Mutex
	types map[string]*typeState
	live  bool // a stream is up
	// connErr is why the last stream failed, until a response arrives on
	// a new one; a new watcher of a resource without a value is told.
	connErr error
	rng     *rand.Rand
	// health is the server's health as gRFC A78 defines it for
	// grpc.xds_client.connected, and streams the handles that record it,
	// one set per channel target however many resolvers it has.
	health  serverHealth
	streams map[metricsKey]*streamEntry
}

// streamEntry is a target's stream handles and the resolvers using them.
type streamEntry struct {
	m    *streamMetrics
	refs int
}

// watchEntry is a target's handles for one resource and the
// subscriptions using them.
type watchEntry struct {
	m    *watchMetrics
	refs int
}

// serverHealth is whether the management server is known to work.
type serverHealth int8

const (
	healthUnknown   serverHealth = iota // no stream yet
	healthy                             // a stream was created, or answered after a failure
	healthUnhealthy                     // a connectivity failure, or a stream that ended without a response
)

// typeState is the client's state for one resource type.
type typeState struct {
	rt *resourceType
	// version is the last accepted version_info; nonce the nonce of the
	// last response on the current stream.
	version, nonce string
	// nack is the error detail the next request carries; "" for an ACK.
	// lastNack is the last one sent, so that a server resending a
	// refused version is logged once.
	nack, lastNack string
	// resources are the subscribed resources, by name.
	resources map[string]*resource
	// dirty is true when a request must be sent; sent when one was sent
	// on the current stream.
	dirty, sent bool
}

// resource is one subscribed resource.
type resource struct {
	watchers map[*subscription]struct{}
	// metrics are the resource's handles, one set per channel target
	// watching it (a resource is counted once per target).
	metrics map[metricsKey]*watchEntry
	value   any
	has     bool  // value is the last valid value
	missing bool  // known not to exist
	err     error // why the last copy received was refused
	timer   *clock.Timer
}

// subscription is one watcher's subscription to a resource. Cancel ends
// it.
type subscription struct {
	c        *client
	url      string
	name     string
	w        watcher
	rm       *resolverMetrics // nil without metrics
	canceled atomic.Bool
}

// newClient starts a client: its stream starts on the client's goroutine.
func newClient(cfg clientConfig, types ...*resourceType) (*client, error) {
	// Each stream has a connection of its own (see session); this one
	// only checks the server URI and the options.
	conn, err := grpc.NewClient(cfg.server.URI, cfg.dialOptions...)
	if err != nil {
		return nil, fmt.Errorf("xds: server %q: %w", cfg.server.URI, err)
	}
	conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{
		cfg:     cfg,
		cancel:  cancel,
		done:    make(chan struct{}),
		queue:   newCallbackQueue(),
		wake:    make(chan struct{}, 1),
		types:   make(map[string]*typeState, len(types)),
		rng:     rand.New(rand.NewPCG(cfg.seed, 0x7864735f61647321)),
		streams: make(map[metricsKey]*streamEntry),
	}
	for _, rt := range types {
		c.types[rt.url] = &typeState{rt: rt, resources: make(map[string]*resource)}
	}
	go c.run(ctx)
	return c, nil
}

// close ends the stream and every goroutine of the client. No watcher
// callback runs after it returns.
func (c *client) close() {
	c.cancel()
	<-c.done
	c.queue.close()
	c.mu.Lock()
	for _, ts := range c.types {
		for _, r := range ts.resources {
			stopTimer(r)
		}
	}
	c.mu.Unlock()
}

// watch subscribes w to the resource of type url named name. What the
// client already knows of it (its value, or that it does not exist) is
// given to w at once, on the callback goroutine. rm, if not nil, records
// the resource's metrics for its channel target.
func (c *client) watch(url, name string, w watcher, rm *resolverMetrics) *subscription {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := c.types[url]
	r := ts.resources[name]
	if r == nil {
		// A resource kept without watchers (see Cancel) leaves the
		// subscription now that another takes its place.
		for n, old := range ts.resources {
			if len(old.watchers) == 0 {
				stopTimer(old)
				delete(ts.resources, n)
			}
		}
		r = &resource{watchers: make(map[*subscription]struct{})}
		ts.resources[name] = r
		ts.dirty = true
		c.signal()
	} else if !ts.dirty && !r.has && !r.missing && r.err == nil && r.timer == nil {
		// A resource kept subscribed after its last watcher left (see
		// Cancel) lost its timer then; no request will restart it.
		c.armTimer(ts, name, r)
	}
	wt := &subscription{c: c, url: url, name: name, w: w, rm: rm}
	r.watchers[wt] = struct{}{}
	if rm != nil {
		key := rm.key()
		e := r.metrics[key]
		if e == nil {
			if r.metrics == nil {
				r.metrics = make(map[metricsKey]*watchEntry)
			}
			e = &watchEntry{m: rm.watch(url)}
			r.metrics[key] = e
		}
		e.refs++
		e.m.note(stateOf(r))
	}
	switch {
	case r.has:
		v := r.value
		c.queue.pushUpdate(wt, func() { w.update(v) })
	case r.missing:
		c.queue.push(wt, w.missing)
	case r.err != nil:
		err := r.err
		c.queue.push(wt, func() { w.failed(err) })
	case c.connErr != nil:
		err := c.connErr
		c.queue.push(wt, func() { w.failed(err) })
	}
	return wt
}

// Cancel ends the subscription: no callback of its watcher runs after
// Cancel returns unless one is running now. The last watch of a resource
// unsubscribes it from the server.
func (wt *subscription) Cancel() {
	if wt.canceled.Swap(true) {
		return
	}
	c := wt.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := c.types[wt.url]
	r := ts.resources[wt.name]
	if r == nil {
		return
	}
	delete(r.watchers, wt)
	if wt.rm != nil {
		key := wt.rm.key()
		if e := r.metrics[key]; e != nil {
			if e.refs--; e.refs == 0 {
				e.m.note(stateNone)
				delete(r.metrics, key)
			}
		}
	}
	if len(r.watchers) > 0 {
		return
	}
	stopTimer(r)
	if len(ts.resources) == 1 && ts.sent {
		// The last resource of its type stays subscribed, and its value
		// kept up to date, until another is watched: a request with no
		// names is a wildcard subscription to many servers (the "legacy
		// wildcard" of the xDS protocol), and go-control-plane's cache
		// answers it with every resource of the type, after which it
		// counts them as sent and would not send one again when it is
		// subscribed to by name.
		return
	}
	delete(ts.resources, wt.name)
	ts.dirty = true
	c.signal()
}

// addStreamMetrics makes rm's target record the server's health from now
// on, until as many removeStreamMetrics.
func (c *client) addStreamMetrics(rm *resolverMetrics) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := rm.key()
	e := c.streams[key]
	if e == nil {
		e = &streamEntry{m: rm.stream()}
		c.streams[key] = e
		if c.health != healthUnknown {
			e.m.connected.Set(boolGauge(c.health == healthy))
		}
	}
	e.refs++
}

// removeStreamMetrics undoes one addStreamMetrics; the target's last
// sets its gauge to 0: its channels no longer have the stream.
func (c *client) removeStreamMetrics(rm *resolverMetrics) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := rm.key()
	if e := c.streams[key]; e != nil {
		if e.refs--; e.refs == 0 {
			delete(c.streams, key)
			e.m.connected.Set(0)
		}
	}
}

// setHealth records the server's health. The caller holds c.mu.
func (c *client) setHealth(h serverHealth) {
	if h == c.health {
		return
	}
	failed := h == healthUnhealthy
	c.health = h
	for _, e := range c.streams {
		e.m.connected.Set(boolGauge(!failed))
		if failed {
			e.m.failures.Add(1)
		}
	}
}

func boolGauge(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// typeStatus returns the last version of type url the client accepted,
// and whether its stream is up.
func (c *client) typeStatus(url string) (version string, live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.types[url].version, c.live
}

// signal wakes the sender. The caller holds c.mu.
func (c *client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run keeps a stream up until ctx ends: after a stream that received a
// response it reconnects at once; otherwise it waits gRPC's backoff on the
// client's clock.
func (c *client) run(ctx context.Context) {
	defer close(c.done)
	retries := 0
	for ctx.Err() == nil {
		if c.session(ctx) {
			retries = 0
			continue
		}
		c.mu.Lock()
		delay := c.cfg.backoff.Delay(retries, c.rng)
		c.mu.Unlock()
		retries++
		t := c.cfg.clock.Timer(delay)
		c.cfg.logger.Info("xds: reconnecting after backoff", "backoff", delay, "attempt", retries)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// session runs one ADS stream until it fails or ctx ends, and reports
// whether it received at least one response.
//
// Every stream has a connection of its own, opened for it and closed with
// it, and fails fast when the connection cannot be made: so the only
// reconnection backoff is the client's own, on its clock, and no
// connection attempt happens between streams.
func (c *client) session(ctx context.Context) bool {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn, err := grpc.NewClient(c.cfg.server.URI, c.cfg.dialOptions...)
	if err != nil {
		c.streamFailed(err, true) // newClient checked the same call
		return false
	}
	defer conn.Close()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(sctx)
	if err != nil {
		if ctx.Err() == nil {
			c.streamFailed(err, true)
		}
		return false
	}
	c.mu.Lock()
	c.live = true
	if c.health == healthUnknown {
		c.setHealth(healthy) // A78: 1 when the first stream is created
	}
	for _, ts := range c.types {
		ts.nonce, ts.sent, ts.nack = "", false, "" // a NACK of the old stream means nothing on this one
		ts.dirty = len(ts.resources) > 0
	}
	c.signal()
	c.mu.Unlock()

	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		c.send(sctx, stream)
		cancel() // a failed Send ends the stream
	}()
	received := false
	for {
		resp, err := stream.Recv()
		if err != nil {
			cancel()
			<-sendDone
			c.mu.Lock()
			c.live = false
			for _, ts := range c.types {
				for _, r := range ts.resources {
					stopTimer(r)
				}
			}
			c.mu.Unlock()
			if ctx.Err() == nil {
				c.streamFailed(err, !received)
			}
			return received
		}
		received = true
		c.handle(resp)
	}
}

// streamFailed tells every watcher that the stream failed. Resources keep
// their last values. unhealthy says the server counts as failed (gRFC
// A57: a connectivity failure, or a stream that ended without a
// response).
func (c *client) streamFailed(err error, unhealthy bool) {
	err = fmt.Errorf("xds: ADS stream to %s: %w", c.cfg.server.URI, err)
	c.cfg.logger.Warn("xds: stream failed; serving the last resources received", "error", err)
	c.mu.Lock()
	defer c.mu.Unlock()
	if unhealthy {
		c.setHealth(healthUnhealthy)
	}
	c.connErr = err
	for _, url := range c.typeURLs() {
		for _, r := range c.types[url].resources {
			for wt := range r.watchers {
				c.queue.push(wt, func() { wt.w.failed(err) })
			}
		}
	}
}

// typeURLs returns the client's types in a fixed order (CDS before EDS).
// The caller holds c.mu.
func (c *client) typeURLs() []string {
	urls := make([]string, 0, len(c.types))
	for url := range c.types {
		urls = append(urls, url)
	}
	slices.Sort(urls) // ...cluster.v3.Cluster < ...endpoint.v3...
	return urls
}

// send sends the pending requests of the stream whenever woken, until
// ctx ends or a Send fails.
func (c *client) send(ctx context.Context, stream grpc.BidiStreamingClient[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse]) {
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		c.mu.Lock()
		var reqs []*discoveryv3.DiscoveryRequest
		for _, url := range c.typeURLs() {
			ts := c.types[url]
			if !ts.dirty {
				continue
			}
			ts.dirty = false
			if len(ts.resources) == 0 && !ts.sent {
				continue // nothing asked for on this stream yet
			}
			req := &discoveryv3.DiscoveryRequest{
				TypeUrl:       url,
				VersionInfo:   ts.version,
				ResponseNonce: ts.nonce,
				ResourceNames: slices.Sorted(maps.Keys(ts.resources)),
			}
			if ts.nack != "" {
				req.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: ts.nack}
				ts.nack = ""
			}
			if first {
				req.Node = c.cfg.node
				first = false
			}
			ts.sent = true
			reqs = append(reqs, req)
		}
		c.mu.Unlock()
		for _, req := range reqs {
			if err := stream.Send(req); err != nil {
				return
			}
			c.startTimers(req)
		}
	}
}

// startTimers starts the does-not-exist timer of every resource req asked
// for that has no value yet.
func (c *client) startTimers(req *discoveryv3.DiscoveryRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live {
		return
	}
	ts := c.types[req.TypeUrl]
	for _, name := range req.ResourceNames {
		r := ts.resources[name]
		if r == nil || r.has || r.missing || r.err != nil || r.timer != nil {
			continue // received (valid or not), known missing, or waited for
		}
		c.armTimer(ts, name, r)
	}
}

// armTimer starts r's does-not-exist timer. The caller holds c.mu; the
// stream must be up.
func (c *client) armTimer(ts *typeState, name string, r *resource) {
	if !c.live {
		return
	}
	var t *clock.Timer
	t = c.cfg.clock.AfterFunc(c.cfg.resourceTimeout, func() { c.timedOut(ts, name, t) })
	r.timer = t
	c.cfg.logger.Debug("xds: waiting for the resource", "type", ts.rt.kind, "resource", name, "timeout", c.cfg.resourceTimeout)
}

// timedOut marks a resource that its timer t waited for as not existing.
func (c *client) timedOut(ts *typeState, name string, t *clock.Timer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := ts.resources[name]
	if r == nil || r.timer != t {
		return // canceled, received or restarted since
	}
	r.timer = nil
	c.cfg.logger.Warn("xds: resource not received in time; it does not exist", "type", ts.rt.kind, "resource", name, "timeout", c.cfg.resourceTimeout)
	c.markMissing(r)
}

// markMissing records that r does not exist and tells its watchers. The
// caller holds c.mu.
func (c *client) markMissing(r *resource) {
	r.value, r.has, r.missing, r.err = nil, false, true, nil
	for _, e := range r.metrics {
		e.m.note(stateDoesNotExist)
	}
	for wt := range r.watchers {
		c.queue.push(wt, wt.w.missing)
	}
}

// handle applies one response: every valid resource is taken (gRFC A46:
// the valid resources of a NACKed response are used), every invalid one
// keeps its last valid value, and the response is ACKed or, when any
// resource is invalid, NACKed with an error detail naming each bad
// resource and field.
func (c *client) handle(resp *discoveryv3.DiscoveryResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connErr = nil
	c.setHealth(healthy) // any response: the stream works
	ts := c.types[resp.GetTypeUrl()]
	if ts == nil {
		c.cfg.logger.Warn("xds: response of a type never asked for; ignored", "type_url", resp.GetTypeUrl())
		return
	}
	ts.nonce = resp.GetNonce()
	var problems []string
	seen := make(map[string]bool, len(resp.GetResources()))
	for i, a := range resp.GetResources() {
		if a.GetTypeUrl() != ts.rt.url {
			problems = append(problems, fmt.Sprintf("resources[%d]: type %q in a response of type %q", i, a.GetTypeUrl(), ts.rt.url))
			continue
		}
		name, value, err := ts.rt.decode(a.GetValue())
		if err == nil && seen[name] {
			err = errors.New("the response has it twice")
		}
		if name != "" {
			seen[name] = true
		}
		r := ts.resources[name]
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %q (resources[%d]): %v", ts.rt.kind, name, i, err))
			if r != nil {
				for _, e := range r.metrics {
					e.m.invalid.Add(1)
				}
				stopTimer(r)
				r.missing = false // it exists, if not in a form lbkit can use
				refused := fmt.Errorf("xds: %s %q refused: %w", ts.rt.kind, name, err)
				if r.err != nil && r.err.Error() == refused.Error() {
					continue // told already: a server resending a NACKed version
				}
				r.err = refused
				for _, e := range r.metrics {
					e.m.note(stateOf(r))
				}
				for wt := range r.watchers {
					err := r.err
					c.queue.push(wt, func() { wt.w.failed(err) })
				}
			}
			continue
		}
		if r == nil {
			continue // not subscribed (any more)
		}
		stopTimer(r)
		r.value, r.has, r.missing, r.err = value, true, false, nil
		for _, e := range r.metrics {
			e.m.valid.Add(1)
			e.m.note(stateAcked)
		}
		for wt := range r.watchers {
			c.queue.pushUpdate(wt, func() { wt.w.update(value) })
		}
	}
	if ts.rt.wholeSet {
		for _, name := range slices.Sorted(maps.Keys(ts.resources)) {
			r := ts.resources[name]
			// Only a resource received before can be deleted: one never
			// received may be missing from this response only because
			// the response answers a request sent before it was
			// subscribed; the does-not-exist timer judges it.
			if seen[name] || !r.has {
				continue
			}
			if c.cfg.server.IgnoreResourceDeletion {
				c.cfg.logger.Warn("xds: the server deleted a resource; keeping it (ignore_resource_deletion)", "type", ts.rt.kind, "resource", name)
				continue
			}
			stopTimer(r)
			c.markMissing(r)
		}
	}
	if len(problems) > 0 {
		ts.nack = strings.Join(problems, "; ")
		level := slog.LevelWarn
		if ts.nack == ts.lastNack {
			level = slog.LevelDebug // the same refusal again
		}
		ts.lastNack = ts.nack
		c.cfg.logger.Log(context.Background(), level, "xds: NACK", "type", ts.rt.kind, "version", resp.GetVersionInfo(), "nonce", resp.GetNonce(), "error", ts.nack)
	} else {
		ts.version, ts.nack, ts.lastNack = resp.GetVersionInfo(), "", ""
		c.cfg.logger.Debug("xds: ACK", "type", ts.rt.kind, "version", ts.version, "nonce", resp.GetNonce(), "resources", len(resp.GetResources()))
	}
	ts.dirty = true
	c.signal()
}

// stopTimer stops r's does-not-exist timer, if any.
func stopTimer(r *resource) {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

// callbackQueue runs watcher callbacks one at a time, in order, on one
// goroutine, so that the client never calls a watcher with its lock held
// and never waits for one. A new value for a watcher whose previous value
// is still waiting, with nothing queued for it since, replaces that value:
// a server faster than the resolver costs one pending value per watcher,
// not one per response.
type callbackQueue struct {
	mu      sync.Mutex
	pending []queued
	// lastUpdate is the index in pending of each watcher's last queued
	// entry when that entry is an update.
	lastUpdate map[*subscription]int
	ready      chan struct{} // capacity 1
	quit       chan struct{}
	done       chan struct{}
}

type queued struct {
	wt *subscription
	fn func()
}

func newCallbackQueue() *callbackQueue {
	q := &callbackQueue{lastUpdate: make(map[*subscription]int), ready: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

// push queues fn for wt's watcher; it never blocks.
func (q *callbackQueue) push(wt *subscription, fn func()) {
	q.mu.Lock()
	delete(q.lastUpdate, wt)
	q.pending = append(q.pending, queued{wt, fn})
	q.mu.Unlock()
	q.wake()
}

// pushUpdate queues fn, which gives wt's watcher a new value, replacing
// the watcher's last queued entry if that is a value not yet given.
func (q *callbackQueue) pushUpdate(wt *subscription, fn func()) {
	q.mu.Lock()
	if i, ok := q.lastUpdate[wt]; ok {
		q.pending[i].fn = fn
	} else {
		q.lastUpdate[wt] = len(q.pending)
		q.pending = append(q.pending, queued{wt, fn})
	}
	q.mu.Unlock()
	q.wake()
}

func (q *callbackQueue) wake() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *callbackQueue) run() {
	defer close(q.done)
	for {
		select {
		case <-q.quit:
			return
		case <-q.ready:
		}
		q.mu.Lock()
		batch := q.pending
		q.pending = nil
		clear(q.lastUpdate)
		q.mu.Unlock()
		for _, e := range batch {
			if !e.wt.canceled.Load() {
				e.fn()
			}
		}
	}
}

// close ends the queue's goroutine, dropping what is pending.
func (q *callbackQueue) close() {
	close(q.quit)
	<-q.done
}
