package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lbkit/lbkit/lb/resolver"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

// The built-in scenario puts gRFC A50's outlier_detection_experimental
// where xDS puts it: at the top of each priority, above its
// weighted_target. The eds resolver's service config has no such layer, so
// the demo resolves through odEDS, which wraps every priority child's
// config in an outlier detection config.

// odScheme is the scheme of the demo's wrapping resolver.
const odScheme = "demo-eds"

// odEDS is a resolver builder that runs the eds resolver and wraps each
// priority child of its service config in outlier detection with config.
type odEDS struct{ config string }

func (b odEDS) Scheme() string { return odScheme }

// TargetIsPath returns true: the target names the eds file, so
// resolver.ParseTarget keeps its leading '/'.
func (b odEDS) TargetIsPath() bool { return true }

// Build starts the eds resolver for target's file.
func (b odEDS) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	target.Scheme = eds.Scheme
	return resolver.Get(eds.Scheme).Build(target, &odCC{ClientConn: cc, config: b.config}, opts)
}

// odCC rewrites the service config of each update on its way to the
// channel.
type odCC struct {
	resolver.ClientConn
	config string
}

func (c *odCC) UpdateState(s resolver.State) error {
	sc, err := wrapPriorities(s.ServiceConfig, c.config)
	if err != nil {
		c.ReportError(fmt.Errorf("lbdemo: adding outlier detection: %w", err))
		return err
	}
	s.ServiceConfig = sc
	return c.ClientConn.UpdateState(s)
}

// wrapPriorities returns the service config sc with the config list of
// every child of its priority_experimental policy replaced by one
// outlier_detection_experimental policy (config fields odFields) whose
// childPolicy is the original list.
func wrapPriorities(sc json.RawMessage, odFields string) (json.RawMessage, error) {
	var doc struct {
		LBC []map[string]json.RawMessage `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal(sc, &doc); err != nil {
		return nil, err
	}
	for _, entry := range doc.LBC {
		raw, ok := entry["priority_experimental"]
		if !ok {
			continue
		}
		var p map[string]json.RawMessage
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		var children map[string]map[string]json.RawMessage
		if err := json.Unmarshal(p["children"], &children); err != nil {
			return nil, err
		}
		for _, child := range children {
			child["config"] = json.RawMessage(`[{"outlier_detection_experimental": {` + odFields + `, "childPolicy": ` + string(child["config"]) + `}}]`)
		}
		var err error
		if p["children"], err = json.Marshal(children); err != nil {
			return nil, err
		}
		if entry["priority_experimental"], err = json.Marshal(p); err != nil {
			return nil, err
		}
	}
	return json.Marshal(doc)
}

// odConfigFor returns the demo's outlier detection config fields for a run
// of duration d: a sweep every d/30 (1 s in the default 30 s run); an
// address whose requests mostly fail in a sweep's interval is ejected for
// two intervals, at most four; one of a priority's four backends may be
// out at a time.
func odConfigFor(d time.Duration) string {
	interval := (d / 30).Round(time.Millisecond)
	secs := func(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }
	return fmt.Sprintf(`"interval": %q, "baseEjectionTime": %q, "maxEjectionTime": %q, "maxEjectionPercent": 25,
		"failurePercentageEjection": {"threshold": 50, "minimumHosts": 2, "requestVolume": 10}`,
		secs(interval), secs(2*interval), secs(4*interval))
}

// odEvent is one ejection or return seen in the outlier detection
// policy's logs, or one health-check verdict seen in the channel's.
type odEvent struct {
	at      time.Time
	addr    string
	ejected bool
	health  string // "unhealthy" or "healthy" for a health-check verdict
}

// odLog is a slog.Handler that keeps the outlier detection policy's
// ejections and returns, so the table can show them. It drops every other
// record.
type odLog struct {
	mu     sync.Mutex
	events []odEvent
}

func (l *odLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelInfo }

func (l *odLog) Handle(_ context.Context, r slog.Record) error {
	ejected := strings.HasPrefix(r.Message, "outlierdetection: ejecting")
	ev := odEvent{at: r.Time, ejected: ejected}
	switch r.Message {
	case "backend unhealthy":
		ev.health = "unhealthy"
	case "backend healthy again":
		ev.health = "healthy"
	default:
		if !ejected && !strings.HasPrefix(r.Message, "outlierdetection: un-ejecting") {
			return nil
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "addr" {
			ev.addr = a.Value.String()
			return false
		}
		return true
	})
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
	return nil
}

func (l *odLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *odLog) WithGroup(string) slog.Handler      { return l }

// take returns the events since the last take.
func (l *odLog) take() []odEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

// outlierWatch follows one backend the script makes fail, through its
// ejection and return. A nil *outlierWatch follows nothing.
type outlierWatch struct {
	name    string
	start   time.Time // when it began failing
	healthy bool      // the script made it healthy again
	ejected bool      // currently ejected
	// firstEjection is its first ejection, lastReturn its latest return
	// to service after that; zero when none.
	firstEjection, lastReturn time.Time
}

// disturbed reports whether the backend is failing or ejected, so that
// priority 0's shares are off.
func (w *outlierWatch) disturbed() bool { return w != nil && (!w.healthy || w.ejected) }

// outlierResult is what the summary says about the failing backend.
type outlierResult struct {
	Backend      string
	Ejected      bool
	EjectedAfter time.Duration // from when it began failing
	Back         bool
	OutFor       time.Duration // from its first ejection to its return
}

func (w *outlierWatch) result() outlierResult {
	if w == nil {
		return outlierResult{}
	}
	r := outlierResult{Backend: w.name, Ejected: !w.firstEjection.IsZero()}
	if r.Ejected {
		r.EjectedAfter = w.firstEjection.Sub(w.start)
	}
	if r.Ejected && !w.ejected && !w.lastReturn.IsZero() {
		r.Back, r.OutFor = true, w.lastReturn.Sub(w.firstEjection)
	}
	return r
}
