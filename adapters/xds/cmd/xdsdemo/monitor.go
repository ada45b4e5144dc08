package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/lbkit/lbkit/adapters/xds"
	"github.com/lbkit/lbkit/adapters/xds/internal/controlplane"
)

// ackMonitor is the demo's [demo.Monitor]: it shows what the management
// server saw of each push, lbkit's ACK of the version's endpoints or its
// NACK with the error detail, and how long after the push it came. Its
// methods are safe for concurrent use.
type ackMonitor struct {
	cp     *controlplane.Server
	ctx    context.Context // ends the waits
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	events []string // since the last Tick
	notes  []string // by push, in push order ("" until answered)
}

func newAckMonitor(cp *controlplane.Server) *ackMonitor {
	ctx, cancel := context.WithCancel(context.Background())
	return &ackMonitor{cp: cp, ctx: ctx, cancel: cancel}
}

// pushed waits, until close, for the answer to the push of s's
// endpoints (of its route configuration when s splits traffic with the
// canary): an ACK of its version, or for a bad snapshot a NACK. The
// channel it returns is closed when the answer came or close was called.
func (m *ackMonitor) pushed(s snapshot) <-chan struct{} {
	answered := make(chan struct{})
	at := time.Now()
	typ, what := xds.EndpointType, "endpoints"
	if s.canary > 0 {
		typ, what = xds.RouteConfigType, "route configuration"
	}
	m.mu.Lock()
	i := len(m.notes)
	m.notes = append(m.notes, fmt.Sprintf("%s: no answer from lbkit by the end", s.version))
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(answered)
		req := m.cp.WaitRequest(m.ctx, func(r *discoveryv3.DiscoveryRequest) bool {
			if r.GetTypeUrl() != typ || r.GetResponseNonce() == "" {
				return false
			}
			if s.bad {
				return r.GetErrorDetail() != nil
			}
			return r.GetErrorDetail() == nil && r.GetVersionInfo() == s.version
		})
		if req == nil {
			return
		}
		after := time.Since(at).Round(time.Millisecond)
		event, note := s.version+" ACKed", fmt.Sprintf("%s: lbkit ACKed the %s %v after the push", s.version, what, after)
		if s.bad {
			event = s.version + " NACKed"
			note = fmt.Sprintf("%s: lbkit NACKed the %s %v after the push, keeping %s: %s",
				s.version, what, after, req.GetVersionInfo(), req.GetErrorDetail().GetMessage())
		}
		m.mu.Lock()
		m.events = append(m.events, event)
		m.notes[i] = note
		m.mu.Unlock()
	}()
	return answered
}

// Tick returns the answers since the last call; no backend is ever
// disturbed.
func (m *ackMonitor) Tick() (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	events := strings.Join(m.events, "; ")
	m.events = nil
	return events, false
}

// Notes returns one line per push.
func (m *ackMonitor) Notes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.notes...)
}

// close ends the waits and returns when they have.
func (m *ackMonitor) close() {
	m.cancel()
	m.wg.Wait()
}
