package xds

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/lbkit/lbkit/lb"
	"github.com/lbkit/lbkit/lb/backoff"
	"google.golang.org/grpc"
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
// run inside the client's serializer, one at a time, in the order the
// client saw the events; they may watch and cancel, and must not block.
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
	// servers are the bootstrap's management servers, in priority order
	// (gRFC A71), each with its dial options.
	servers         []serverConfig
	node            *corev3.Node
	clock           clock.Clock
	logger          *slog.Logger
	backoff         backoff.Config
	resourceTimeout time.Duration
	seed            uint64
	// runStream runs a stream on a goroutine of its own; nil means
	// (*adsStream).run, which dials the server. Tests of the client's
	// state machine give their own and play the server's part.
	runStream func(*adsStream)
}

// serverConfig is one management server and the options to dial it.
type serverConfig struct {
	Server
	dialOptions []grpc.DialOption
}

// client is one ADS stream to a management server, shared by every
// resolver of a [Builder] that uses that server. It keeps the last valid
// value of every subscribed resource across stream failures, so resolvers
// keep serving while it reconnects with backoff (gRFC A57). With more
// than one server it falls back to the next while the first cannot be
// reached and a watched resource is not cached, and back when the first
// answers (gRFC A71; see fallback.go).
//
// One [lb.Serializer] owns everything below ser: the resource cache,
// versions, nonces, NACK state, watchers, the streams' state, the
// reconnection and does-not-exist timers, and the state of the resolvers
// watching (their callbacks run inside it). The streams' goroutines only
// hand it what they receive and send what it builds (see stream.go).
// Every method but newClient, close and typeStatus runs inside the
// serializer.
type client struct {
	cfg    clientConfig
	ser    *lb.Serializer
	ctx    context.Context // ends with close; every stream's parent
	cancel context.CancelFunc
	wg     sync.WaitGroup // the stream goroutines
	// status is what Describe reads without waiting for the serializer.
	status atomic.Pointer[clientStatus]

	// Owned by ser.
	types map[string]*typeState
	// conns are the links to cfg.servers, in the same order; source is
	// the index of the one whose resources the cache holds.
	conns  []*serverConn
	source int
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

// clientStatus is a copy of what [xdsResolver.Describe] shows of the
// client, replaced whenever it changes.
type clientStatus struct {
	server   string // the source's URI
	live     bool
	versions map[string]string // by type URL
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
	// resources are the subscribed resources, by name.
	resources map[string]*resource
}

// wireState is what one server was told of one resource type.
type wireState struct {
	// version is the last accepted version_info; nonce the nonce of the
	// last response on the current stream.
	version, nonce string
	// nack is the error detail the next request carries; "" for an ACK.
	// lastNack is the last one sent, so that a server resending a
	// refused version is logged once.
	nack, lastNack string
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
	// raw is the encoding value was read from, so that the same bytes
	// again are not read nor told (grpc-go does the same); nil after
	// watchers were told of a failure, so that the next copy tells them
	// the resource is good again.
	raw     []byte
	has     bool     // value is the last valid value
	missing bool     // known not to exist
	err     error    // why the last copy received was refused
	timer   lb.Timer // the does-not-exist timer; nil when not waiting
}

// subscription is one watcher's subscription to a resource. Its fields
// are owned by the client's serializer.
type subscription struct {
	c        *client
	url      string
	name     string
	w        watcher
	rm       *resolverMetrics // nil without metrics
	canceled bool
}

// newClient starts a client: its first stream starts with the first
// watch, so that a failure of that stream finds a watcher waiting (gRFC
// A71 falls back only then).
func newClient(cfg clientConfig, types ...*resourceType) (*client, error) {
	// Each stream has a connection of its own (see stream.go); these
	// only check the server URIs and the options.
	for _, sc := range cfg.servers {
		conn, err := grpc.NewClient(sc.URI, sc.dialOptions...)
		if err != nil {
			return nil, fmt.Errorf("xds: server %q: %w", sc.URI, err)
		}
		conn.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{
		cfg:     cfg,
		ser:     lb.NewSerializer(cfg.clock),
		ctx:     ctx,
		cancel:  cancel,
		types:   make(map[string]*typeState, len(types)),
		rng:     rand.New(rand.NewPCG(cfg.seed, 0x7864735f61647321)),
		streams: make(map[metricsKey]*streamEntry),
	}
	for _, rt := range types {
		c.types[rt.url] = &typeState{rt: rt, resources: make(map[string]*resource)}
	}
	for i, sc := range cfg.servers {
		c.conns = append(c.conns, newServerConn(i, sc, types))
	}
	c.publishStatus()
	return c, nil
}

// close ends the stream and every goroutine of the client, and stops its
// timers. No watcher callback runs after it returns. It must not be
// called inside the serializer.
func (c *client) close() {
	c.cancel()
	c.ser.Close()
	c.wg.Wait()
}

// rewatch ends old (nil: none) and subscribes w to the resource of type
// url named name as watch does, or to nothing for an empty name (nil): a
// follower switching the resource it follows.
func (c *client) rewatch(old *subscription, url, name string, w watcher, rm *resolverMetrics) *subscription {
	if old != nil {
		old.cancel()
	}
	if name == "" {
		return nil
	}
	return c.watch(url, name, w, rm)
}

// watch subscribes w to the resource of type url named name. What the
// client already knows of it (its value, or that it does not exist, or
// why it failed) is given to w by a callback scheduled now. rm, if not
// nil, records the resource's metrics for its channel target.
func (c *client) watch(url, name string, w watcher, rm *resolverMetrics) *subscription {
	ts := c.types[url]
	r := ts.resources[name]
	if r == nil {
		// A resource kept without watchers (see cancel) leaves the
		// subscription now that another takes its place.
		for n, old := range ts.resources {
			if len(old.watchers) == 0 {
				stopTimer(old)
				delete(ts.resources, n)
			}
		}
		r = &resource{watchers: make(map[*subscription]struct{})}
		ts.resources[name] = r
		c.requestSoon(ts)
	} else if !c.requestPending(ts) && !r.has && !r.missing && r.err == nil && r.timer == nil {
		// A resource kept subscribed after its last watcher left (see
		// cancel) lost its timer then; no request will restart it.
		c.armTimer(ts, name, r)
	}
	sub := &subscription{c: c, url: url, name: name, w: w, rm: rm}
	r.watchers[sub] = struct{}{}
	if first := c.conns[0]; !first.inUse() {
		c.startStream(first) // the first watch
	}
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
	var tell func()
	switch {
	case r.has:
		v := r.value
		tell = func() { w.update(v) }
	case r.missing:
		tell = w.missing
	case r.err != nil:
		err := r.err
		tell = func() { w.failed(err) }
	case c.connErr != nil:
		err := c.connErr
		tell = func() { w.failed(err) }
	}
	if tell != nil {
		// Scheduled, not called: the watcher may be in the middle of a
		// callback that subscribes it.
		c.ser.Schedule(func() {
			if !sub.canceled {
				tell()
			}
		})
	}
	return sub
}

// cancel ends the subscription: no callback of its watcher runs after it.
// The last watch of a resource unsubscribes it from the server. It runs
// inside the serializer; calling it again does nothing.
func (sub *subscription) cancel() {
	if sub.canceled {
		return
	}
	sub.canceled = true
	c := sub.c
	ts := c.types[sub.url]
	r := ts.resources[sub.name]
	if r == nil {
		return
	}
	delete(r.watchers, sub)
	if sub.rm != nil {
		key := sub.rm.key()
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
	if len(ts.resources) == 1 && c.conns[c.source].wire[ts.rt.url].sent {
		// The last resource of its type stays subscribed, and its value
		// kept up to date, until another is watched: a request with no
		// names is a wildcard subscription to many servers (the "legacy
		// wildcard" of the xDS protocol), and go-control-plane's cache
		// answers it with every resource of the type, after which it
		// counts them as sent and would not send one again when it is
		// subscribed to by name.
		return
	}
	delete(ts.resources, sub.name)
	c.requestSoon(ts)
}

// notify calls fn for every watcher of r not canceled yet (a callback
// may cancel another watcher of the same resource).
func (r *resource) notify(fn func(w watcher)) {
	for sub := range r.watchers {
		if !sub.canceled {
			fn(sub.w)
		}
	}
}

// addStreamMetrics makes rm's target record the server's health from now
// on, until as many removeStreamMetrics.
func (c *client) addStreamMetrics(rm *resolverMetrics) {
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
	key := rm.key()
	if e := c.streams[key]; e != nil {
		if e.refs--; e.refs == 0 {
			delete(c.streams, key)
			e.m.connected.Set(0)
		}
	}
}

// setHealth records the server's health.
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

// publishStatus replaces the status Describe reads with the current one.
func (c *client) publishStatus() {
	src := c.conns[c.source]
	st := &clientStatus{server: src.URI, live: src.live, versions: make(map[string]string, len(c.types))}
	for url, w := range src.wire {
		st.versions[url] = w.version
	}
	c.status.Store(st)
}

// typeStatus returns the server whose resources the client uses, the last
// version of type url the client accepted from it, and whether its stream
// is up. It is safe for concurrent use.
func (c *client) typeStatus(url string) (server, version string, live bool) {
	st := c.status.Load()
	return st.server, st.versions[url], st.live
}

// serverURI is the URI of the server whose resources the client uses.
// It is safe for concurrent use.
func (c *client) serverURI() string { return c.status.Load().server }

// typeURLs returns the client's types in a fixed order (CDS before EDS).
func (c *client) typeURLs() []string {
	urls := make([]string, 0, len(c.types))
	for url := range c.types {
		urls = append(urls, url)
	}
	slices.Sort(urls) // ...cluster.v3.Cluster < ...endpoint.v3...
	return urls
}
