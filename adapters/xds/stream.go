package xds

import (
	"context"
	"fmt"
	"maps"
	"slices"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// adsStream is one ADS stream. Two goroutines serve it: run dials,
// receives and hands every response to the client's serializer; send
// sends the requests the serializer builds, whenever wake says some are
// due. Neither touches the client's state.
type adsStream struct {
	c      *client
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // capacity 1: requests are due

	// Owned by the client's serializer.
	nodeSent bool // the node went with a request (the first)
	received bool // a response arrived
}

// startStream starts a new stream. It runs inside the serializer.
func (c *client) startStream() {
	ctx, cancel := context.WithCancel(c.ctx)
	s := &adsStream{c: c, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1)}
	c.stream = s
	c.wg.Add(1)
	go s.run()
}

// run runs the stream until it fails or the client closes, then hands the
// end to the serializer.
//
// Every stream has a connection of its own, opened for it and closed with
// it, and fails fast when the connection cannot be made: so the only
// reconnection backoff is the client's own, on its clock, and no
// connection attempt happens between streams.
func (s *adsStream) run() {
	defer s.c.wg.Done()
	defer s.cancel()
	c := s.c
	conn, err := grpc.NewClient(c.cfg.server.URI, c.cfg.dialOptions...)
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
		c.ser.Schedule(func() { c.handle(s, resp) })
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

// streamUp records that s was created: the server counts as healthy the
// first time (gRFC A78), and everything subscribed is asked for again.
func (c *client) streamUp(s *adsStream) {
	c.live = true
	if c.health == healthUnknown {
		c.setHealth(healthy)
	}
	for _, ts := range c.types {
		ts.nonce, ts.sent, ts.nack = "", false, "" // a NACK of the old stream means nothing on this one
		ts.dirty = len(ts.resources) > 0
	}
	c.publishStatus()
	s.signal()
}

// streamEnded records the end of s: every resource keeps its value, every
// watcher hears why, and the next stream starts at once after a stream
// that received a response, else after gRPC's backoff on the client's
// clock. The server counts as failed (gRFC A57) unless s received a
// response.
func (c *client) streamEnded(s *adsStream, err error) {
	c.stream, c.live = nil, false
	c.publishStatus()
	for _, ts := range c.types {
		for _, r := range ts.resources {
			stopTimer(r)
		}
	}
	if c.ctx.Err() != nil {
		return // closing
	}
	err = fmt.Errorf("xds: ADS stream to %s: %w", c.cfg.server.URI, err)
	c.cfg.logger.Warn("xds: stream failed; serving the last resources received", "error", err)
	if !s.received {
		c.setHealth(healthUnhealthy)
	}
	c.connErr = err
	for _, url := range c.typeURLs() {
		for _, r := range c.types[url].resources {
			r.notify(func(w watcher) { w.failed(err) })
		}
	}
	if s.received {
		c.retries = 0
		c.startStream()
		return
	}
	delay := c.cfg.backoff.Delay(c.retries, c.rng)
	c.retries++
	c.cfg.logger.Info("xds: reconnecting after backoff", "backoff", delay, "attempt", c.retries)
	c.ser.AfterFunc(delay, c.startStream)
}

// requestSoon marks ts as needing a request and wakes the sender.
func (c *client) requestSoon(ts *typeState) {
	ts.dirty = true
	if c.stream != nil {
		c.stream.signal()
	}
}

// signal wakes the sender.
func (s *adsStream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// requests returns the requests due on s, and counts them as sent. s is
// the current stream: its end is scheduled only after its sender, the
// caller, has returned.
func (c *client) requests(s *adsStream) []*discoveryv3.DiscoveryRequest {
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
		if !s.nodeSent {
			req.Node = c.cfg.node
			s.nodeSent = true
		}
		ts.sent = true
		reqs = append(reqs, req)
	}
	return reqs
}
