package xds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// handle applies one response from sc, the source: every valid resource
// is taken (gRFC A46: the valid resources of a NACKed response are used),
// every invalid one keeps its last valid value, and the response is ACKed
// or, when any resource is invalid, NACKed with an error detail naming
// each bad resource and field. Watchers hear of it once the cache is
// updated.
func (c *client) handle(sc *serverConn, resp *discoveryv3.DiscoveryResponse) {
	ts := c.types[resp.GetTypeUrl()]
	if ts == nil {
		c.cfg.logger.Warn("xds: response of a type never asked for; ignored", "type_url", resp.GetTypeUrl())
		return
	}
	w := sc.wire[ts.rt.url]
	w.nonce = resp.GetNonce()
	var tell []func()
	problems, seen := c.apply(ts, resp, &tell)
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
			if sc.IgnoreResourceDeletion {
				c.cfg.logger.Warn("xds: the server deleted a resource; keeping it (ignore_resource_deletion)", "type", ts.rt.kind, "resource", name)
				continue
			}
			stopTimer(r)
			tell = append(tell, c.markMissing(r))
		}
	}
	if len(problems) > 0 {
		w.nack = strings.Join(problems, "; ")
		level := slog.LevelWarn
		if w.nack == w.lastNack {
			level = slog.LevelDebug // the same refusal again
		}
		w.lastNack = w.nack
		c.cfg.logger.Log(context.Background(), level, "xds: NACK", "type", ts.rt.kind, "version", resp.GetVersionInfo(), "nonce", resp.GetNonce(), "error", w.nack)
	} else {
		w.version, w.nack, w.lastNack = resp.GetVersionInfo(), "", ""
		c.publishStatus()
		c.cfg.logger.Debug("xds: ACK", "type", ts.rt.kind, "version", w.version, "nonce", resp.GetNonce(), "resources", len(resp.GetResources()))
	}
	w.dirty = true
	if sc.stream != nil {
		sc.stream.signal()
	}
	for _, f := range tell {
		f()
	}
}

// apply takes the resources of resp into the cache, appends to tell what
// their watchers must hear, and returns the problems of the invalid ones
// and the names of those read.
func (c *client) apply(ts *typeState, resp *discoveryv3.DiscoveryResponse, tell *[]func()) ([]string, map[string]bool) {
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
				if f := c.refuse(ts, name, r, err); f != nil {
					*tell = append(*tell, f)
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
		*tell = append(*tell, func() { r.notify(func(w watcher) { w.update(value) }) })
	}
	return problems, seen
}

// refuse records that the copy of r received is invalid, and returns what
// its watchers must hear; nil when they heard it already (a server
// resending a NACKed version).
func (c *client) refuse(ts *typeState, name string, r *resource, err error) func() {
	for _, e := range r.metrics {
		e.m.invalid.Add(1)
	}
	stopTimer(r)
	r.missing = false // it exists, if not in a form lbkit can use
	refused := fmt.Errorf("xds: %s %q refused: %w", ts.rt.kind, name, err)
	if r.err != nil && r.err.Error() == refused.Error() {
		return nil
	}
	r.err = refused
	for _, e := range r.metrics {
		e.m.note(stateOf(r))
	}
	return func() { r.notify(func(w watcher) { w.failed(refused) }) }
}

// startTimers starts the does-not-exist timer of every resource req asked
// for that has no value yet, once req is sent.
func (c *client) startTimers(req *discoveryv3.DiscoveryRequest) {
	ts := c.types[req.TypeUrl]
	for _, name := range req.ResourceNames {
		r := ts.resources[name]
		if r == nil || r.has || r.missing || r.err != nil || r.timer != nil {
			continue // received (valid or not), known missing, or waited for
		}
		c.armTimer(ts, name, r)
	}
}

// armTimer starts r's does-not-exist timer, when the stream is up: a
// [lb.Serializer] timer, so Stop is final and the callback needs no check
// that it is still wanted.
func (c *client) armTimer(ts *typeState, name string, r *resource) {
	if !c.anyLive() {
		return
	}
	r.timer = c.ser.AfterFunc(c.cfg.resourceTimeout, func() {
		r.timer = nil
		c.cfg.logger.Warn("xds: resource not received in time; it does not exist", "type", ts.rt.kind, "resource", name, "timeout", c.cfg.resourceTimeout)
		c.markMissing(r)()
	})
	c.cfg.logger.Debug("xds: waiting for the resource", "type", ts.rt.kind, "resource", name, "timeout", c.cfg.resourceTimeout)
}

// markMissing records that r does not exist, and returns what its
// watchers must hear.
func (c *client) markMissing(r *resource) func() {
	r.value, r.has, r.missing, r.err = nil, false, true, nil
	for _, e := range r.metrics {
		e.m.note(stateDoesNotExist)
	}
	return func() { r.notify(watcher.missing) }
}

// stopTimer stops r's does-not-exist timer, if any.
func stopTimer(r *resource) {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}
