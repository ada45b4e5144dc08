package xds

import (
	"fmt"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Fallback (gRFC A71): the servers of the bootstrap's list are tried in
// order. The client streams to the first; when a server cannot be
// reached (a connectivity failure as A57 defines it) while a watched
// resource is not cached (neither received valid nor known not to exist),
// the client also streams to the next server, subscribing to everything
// it watches there, and keeps reconnecting to the ones before. The first
// server of the list that answers becomes the source: its resources fill
// the cache and the streams to the servers after it are closed. Watchers
// hear of a connectivity failure only when no server can serve.

// received takes a response of s: a server before the source that
// answers becomes the source, and so does one after it while the source
// cannot be reached.
func (c *client) received(s *adsStream, resp *discoveryv3.DiscoveryResponse) {
	if !s.current() {
		return
	}
	sc := s.sc
	s.received, sc.down = true, false
	if sc.index == 0 {
		c.setHealth(healthy) // any response: the stream works
	}
	switch {
	case sc.index < c.source:
		c.cfg.logger.Warn("xds: back to a server before the fallback", "server_index", sc.index)
	case sc.index > c.source:
		if !c.conns[c.source].down {
			return // the source answers again; this stream is about to close
		}
		c.cfg.logger.Warn("xds: falling back to the next server", "server_index", sc.index)
	}
	// Also when sc was the source: a fallback started since, not yet
	// answering, is no longer needed (found by TestPropertyFallback).
	c.useSource(sc.index)
	c.connErr = nil
	c.handle(sc, resp)
}

// useSource makes conns[i] the source and stops the streams to the
// servers after it, if any. The servers before it forget the versions
// they sent: the cache no longer holds them, so each must send
// everything again when it answers.
func (c *client) useSource(i int) {
	c.source = i
	for _, sc := range c.conns[:i] {
		for _, w := range sc.wire {
			w.version = ""
		}
	}
	for _, sc := range c.conns[i+1:] {
		if sc.stream != nil {
			sc.stream.cancel()
		}
		if sc.retry != nil {
			sc.retry.Stop()
		}
		sc.stream, sc.retry, sc.live, sc.down, sc.retries = nil, nil, false, false, 0
		for _, w := range sc.wire {
			*w = wireState{}
		}
	}
	c.publishStatus()
}

// streamFailed handles the failure of sc's stream: it falls back to the
// next server when it should, and else tells every watcher, whose
// resources keep their last values.
func (c *client) streamFailed(sc *serverConn, err error) {
	err = fmt.Errorf("xds: ADS stream to %s: %w", sc.URI, err)
	c.cfg.logger.Warn("xds: stream failed; serving the last resources received", "error", err)
	if c.fallBack(sc) || c.serving(sc) {
		return
	}
	c.connErr = err
	for _, url := range c.typeURLs() {
		for _, r := range c.types[url].resources {
			r.raw = nil // the next copy, even unchanged, tells that it is good again
			r.notify(func(w watcher) { w.failed(err) })
		}
	}
}

// fallBack starts a stream to the server after sc, and reports whether it
// did: when sc cannot be reached, nor can any server before it, that
// server is not in use yet, and a watched resource is not cached.
func (c *client) fallBack(sc *serverConn) bool {
	next := sc.index + 1
	if !sc.down || next >= len(c.conns) || c.conns[next].inUse() || !c.uncached() {
		return false
	}
	for _, before := range c.conns[:sc.index] {
		if !before.down {
			return false
		}
	}
	c.startStream(c.conns[next])
	return true
}

// serving reports whether a server other than sc can serve, or may: one
// in use that is not known to be unreachable.
func (c *client) serving(sc *serverConn) bool {
	for _, o := range c.conns {
		if o != sc && o.inUse() && !o.down {
			return true
		}
	}
	return false
}

// uncached reports whether a watched resource is neither known valid nor
// known not to exist.
func (c *client) uncached() bool {
	for _, ts := range c.types {
		for _, r := range ts.resources {
			if len(r.watchers) > 0 && !r.has && !r.missing {
				return true
			}
		}
	}
	return false
}
