// Package debugpage serves channels' snapshots ([conn.Channel.Snapshot]) over
// HTTP: as JSON, and as a small HTML page that refreshes itself every second
// and loads nothing from elsewhere (no script, style sheet or image beyond
// the page itself).
//
// Mount it where operators can reach it and users cannot:
//
//	mux.Handle("/debug/lbkit/", http.StripPrefix("/debug/lbkit", debugpage.New(ch)))
//
// GET / (any path) is the HTML page; GET with ?format=json is the JSON, an
// array with one snapshot per channel. docs/observability.md lists every
// field.
package debugpage

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb"
)

// snapshotTimeout bounds how long a request waits for a busy channel's
// serializer.
const snapshotTimeout = 5 * time.Second

//go:embed page.html
var files embed.FS

var page = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"at":    at,
	"rate":  rate,
	"lower": func(s lb.ConnectivityState) string { return stateClass(s) },
}).ParseFS(files, "page.html"))

// at shows a time (a time.Time or a non-nil *time.Time) as a <time>
// element: the time of day to the millisecond, with the full RFC 3339 time
// as its tooltip and datetime.
func at(v any) template.HTML {
	var t time.Time
	switch v := v.(type) {
	case time.Time:
		t = v
	case *time.Time:
		if v == nil {
			return "–"
		}
		t = *v
	default:
		return "–"
	}
	full := template.HTMLEscapeString(t.Format(time.RFC3339Nano))
	return template.HTML(`<time datetime="` + full + `" title="` + full + `">` + t.Format("15:04:05.000") + `</time>`)
}

// rate shows a failure rate as a percentage, or "–" when there is none.
func rate(r *float64) string {
	if r == nil {
		return "–"
	}
	return strconv.FormatFloat(*r*100, 'f', 1, 64) + "%"
}

// Handler serves the snapshots of its channels. Create it with [New]. It is
// safe for concurrent use.
type Handler struct {
	channels []*conn.Channel
}

// New returns a handler for channels, shown in this order. A nil channel
// is shown as an error naming its position ("debugpage.New: channel 2 of 2
// is nil"), the others as usual.
func New(channels ...*conn.Channel) *Handler {
	return &Handler{channels: append([]*conn.Channel(nil), channels...)}
}

// entry is one channel's snapshot, or why there is none.
type entry struct {
	conn.Snapshot
	Error string `json:"error,omitempty"`
}

// ServeHTTP answers GET and HEAD with the HTML page, or with JSON when the
// query has format=json; other methods get 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "debugpage: method not allowed", http.StatusMethodNotAllowed)
		return
	}
	entries := h.snapshots(r.Context())
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(entries) // a write error means the client left
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = page.Execute(w, entries) // a write error means the client left
}

// snapshots takes every channel's snapshot.
func (h *Handler) snapshots(ctx context.Context) []entry {
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	out := make([]entry, len(h.channels))
	for i, ch := range h.channels {
		if ch == nil {
			out[i].Error = fmt.Sprintf("debugpage.New: channel %d of %d is nil", i+1, len(h.channels))
			continue
		}
		s, err := ch.Snapshot(ctx)
		out[i] = entry{Snapshot: s}
		if err != nil {
			out[i].Target, out[i].Error = ch.Target(), err.Error()
		}
	}
	return out
}

// stateClass returns the CSS class of a state: its name in lower case.
func stateClass(s lb.ConnectivityState) string {
	switch s {
	case lb.Ready:
		return "ready"
	case lb.Connecting:
		return "connecting"
	case lb.Idle:
		return "idle"
	case lb.TransientFailure:
		return "transient_failure"
	}
	return "shutdown"
}
