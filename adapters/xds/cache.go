package xds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
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
		if r := unchanged(ts, a.GetValue(), seen); r != nil {
			// The bytes of the copy in use again (a server resends every
			// resource with each version): valid as before, and nothing
			// for its watchers to hear. The version is still ACKed.
			for _, e := range r.metrics {
				e.m.valid.Add(1)
				e.m.note(stateAcked)
			}
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
		r.value, r.raw, r.has, r.missing, r.err = value, a.GetValue(), true, false, nil
		for _, e := range r.metrics {
			e.m.valid.Add(1)
			e.m.note(stateAcked)
		}
		*tell = append(*tell, func() { r.notify(func(w watcher) { w.update(value) }) })
	}
	return problems, seen
}

// unchanged returns the subscribed resource whose value in use was read
// from exactly raw, and marks it seen; nil when raw is another copy, of a
// resource not subscribed, already seen in this response, or whose last
// copy was refused or whose watchers were told of a failure since (see
// streamFailed): those are read again. Equal bytes decode to the same
// name and value, so the name raw's first field seems to hold needs no
// trust: a wrong guess finds bytes that differ.
func unchanged(ts *typeState, raw []byte, seen map[string]bool) *resource {
	name, ok := nameField(raw)
	if !ok || seen[name] {
		return nil
	}
	r := ts.resources[name]
	if r == nil || !r.has || r.err != nil || r.raw == nil || !bytes.Equal(r.raw, raw) {
		return nil
	}
	seen[name] = true
	return r
}

// nameField returns the last value of field 1 of the message encoded in
// raw, read as a string: the name of a Cluster and of a
// ClusterLoadAssignment (cluster_name). ok is false when raw has no such
// field or is not a valid encoding.
func nameField(raw []byte) (name string, ok bool) {
	var last []byte
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return "", false
		}
		raw = raw[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(raw)
			if m < 0 {
				return "", false
			}
			last, ok, raw = v, true, raw[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, raw)
		if m < 0 {
			return "", false
		}
		raw = raw[m:]
	}
	return string(last), ok
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
	r.value, r.raw, r.has, r.missing, r.err = nil, nil, false, true, nil
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
