package xds

import (
	"context"
	"maps"
	"slices"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/lbkit/lbkit/lb"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// serverConn is the client's link to one management server of its list:
// its stream, its reconnection backoff, and what the server was told. It
// is owned by the client's serializer.
type serverConn struct {
	serverConfig
	index   int        // priority: the server's place in the bootstrap's list
	stream  *adsStream // the current stream; nil between streams and when not in use
	live    bool       // stream has been created and not ended
	retries int        // streams in a row that ended without a response
	retry   lb.Timer   // the pending backoff; nil when none
	// down is true from a connectivity failure (a stream that could not
	// be made, or ended without a response: gRFC A57) to the next
	// response.
	down bool
	wire map[string]*wireState // by type URL
}

func newServerConn(i int, sc serverConfig, types []*resourceType) *serverConn {
	c := &serverConn{serverConfig: sc, index: i, wire: make(map[string]*wireState, len(types))}
	for _, rt := range types {
		c.wire[rt.url] = &wireState{}
	}
	return c
}

// inUse reports whether the client keeps a stream to sc, or waits to
// make one.
func (sc *serverConn) inUse() bool { return sc.stream != nil || sc.retry != nil }

// adsStream is one ADS stream. Two goroutines serve it: run dials,
// receives and hands every response to the client's serializer; send
// sends the requests the serializer builds, whenever wake says some are
// due. Neither touches the client's state.
type adsStream struct {
	c      *client
	sc     *serverConn
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // capacity 1: requests are due

	// Owned by the client's serializer.
	nodeSent bool // the node went with a request (the first)
	received bool // a response arrived
}

// startStream starts a new stream to sc.
func (c *client) startStream(sc *serverConn) {
	ctx, cancel := context.WithCancel(c.ctx)
	s := &adsStream{c: c, sc: sc, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1)}
	sc.stream, sc.retry = s, nil
	run := c.cfg.runStream
	if run == nil {
		run = (*adsStream).run
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		run(s)
	}()
}

// run runs the stream until it fails, is stopped or the client closes,
// then hands the end to the serializer.
//
// Every stream has a connection of its own, opened for it and closed with
// it, and fails fast when the connection cannot be made: so the only
// reconnection backoff is the client's own, on its clock, and no
// connection attempt happens between streams.
func (s *adsStream) run() {
	defer s.cancel()
	c := s.c
	conn, err := grpc.NewClient(s.sc.URI, s.sc.dialOptions...)
	if err != nil {
		c.ser.Schedule(func() { c.streamEnded(s, err) }) // newClient checked the same call
		return
	}
	defer conn.Close()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(s.ctx)
	if err != nil {
		c.ser.Schedule(func() { c.streamEnded(s, err) })
		return
	}
	c.ser.Schedule(func() { c.streamUp(s) })
	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		s.send(stream)
		s.cancel() // a failed Send ends the stream
	}()
	for {
		resp, err := stream.Recv()
		if err != nil {
			s.cancel()
			<-sendDone // its last scheduled callback comes before the end
			c.ser.Schedule(func() { c.streamEnded(s, err) })
			return
		}
		c.ser.Schedule(func() { c.received(s, resp) })
	}
}

// send sends the requests the serializer builds whenever woken, until the
// stream ends or a Send fails.
func (s *adsStream) send(stream grpc.BidiStreamingClient[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse]) {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		}
		var reqs []*discoveryv3.DiscoveryRequest
		if s.c.ser.Run(s.ctx, func() { reqs = s.c.requests(s) }) != nil {
			return
		}
		for _, req := range reqs {
			if err := stream.Send(req); err != nil {
				return
			}
			s.c.ser.Schedule(func() { s.c.startTimers(req) })
		}
	}
}

// current reports whether s is its server's current stream: false once
// the client stopped using the server (fallback.go), so that what its
// goroutines hand over after that is dropped.
func (s *adsStream) current() bool { return s.sc.stream == s }

// streamUp records that s was created: the server counts as healthy the
// first time (gRFC A78), and everything subscribed is asked for again.
func (c *client) streamUp(s *adsStream) {
	if !s.current() {
		return
	}
	sc := s.sc
	sc.live = true
	if sc.index == 0 && c.health == healthUnknown {
		c.setHealth(healthy)
	}
	for url, w := range sc.wire {
		w.nonce, w.sent, w.nack = "", false, "" // a NACK of the old stream means nothing on this one
		w.dirty = len(c.types[url].resources) > 0
	}
	c.publishStatus()
	s.signal()
}

// streamEnded records the end of s: every resource keeps its value. A
// stream that received a response is followed by the next at once, and
// its end is no error (gRFC A57); one that did not is a connectivity
// failure: the client falls back to the next server if it should
// (fallback.go), else tells the watchers, and makes the next stream after
// gRPC's backoff on the client's clock.
func (c *client) streamEnded(s *adsStream, err error) {
	if !s.current() {
		return
	}
	sc := s.sc
	sc.stream, sc.live = nil, false
	c.publishStatus()
	if !c.anyLive() {
		for _, ts := range c.types {
			for _, r := range ts.resources {
				stopTimer(r)
			}
		}
	}
	if c.ctx.Err() != nil {
		return // closing
	}
	if !s.received {
		sc.down = true
		if sc.index == 0 {
			c.setHealth(healthUnhealthy)
		}
	}
	if s.received {
		// Not an error (gRFC A57): a server may close a stream that
		// answered (to rebalance, or at its connections' maximum age).
		// Watchers hear nothing; a new stream starts at once.
		c.cfg.logger.Info("xds: the server closed a stream that answered; reconnecting", "server_index", sc.index, "error", err)
		sc.retries = 0
		c.startStream(sc)
		return
	}
	c.streamFailed(sc, err)
	delay := c.cfg.backoff.Delay(sc.retries, c.rng)
	sc.retries++
	c.cfg.logger.Info("xds: reconnecting after backoff", "server_index", sc.index, "backoff", delay, "attempt", sc.retries)
	sc.retry = c.ser.AfterFunc(delay, func() { c.startStream(sc) })
}

// anyLive reports whether a stream is up.
func (c *client) anyLive() bool {
	return slices.ContainsFunc(c.conns, func(sc *serverConn) bool { return sc.live })
}

// requestSoon marks ts as needing a request on every stream and wakes
// their senders.
func (c *client) requestSoon(ts *typeState) {
	for _, sc := range c.conns {
		sc.wire[ts.rt.url].dirty = true
		if sc.stream != nil {
			sc.stream.signal()
		}
	}
}

// requestPending reports whether a request for ts waits to be sent to the
// source.
func (c *client) requestPending(ts *typeState) bool {
	return c.conns[c.source].wire[ts.rt.url].dirty
}

// signal wakes the sender.
func (s *adsStream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// requests returns the requests due on s, and counts them as sent.
func (c *client) requests(s *adsStream) []*discoveryv3.DiscoveryRequest {
	if !s.current() {
		return nil
	}
	var reqs []*discoveryv3.DiscoveryRequest
	for _, url := range c.typeURLs() {
		ts, w := c.types[url], s.sc.wire[url]
		if !w.dirty {
			continue
		}
		w.dirty = false
		if len(ts.resources) == 0 && !w.sent {
			continue // nothing asked for on this stream yet
		}
		req := &discoveryv3.DiscoveryRequest{
			TypeUrl:       url,
			VersionInfo:   w.version,
			ResponseNonce: w.nonce,
			ResourceNames: slices.Sorted(maps.Keys(ts.resources)),
		}
		if w.nack != "" {
			req.ErrorDetail = &statuspb.Status{Code: int32(codes.InvalidArgument), Message: w.nack}
			w.nack = ""
		}
		if !s.nodeSent {
			req.Node = c.cfg.node
			s.nodeSent = true
		}
		w.sent = true
		reqs = append(reqs, req)
	}
	return reqs
}
