package lbtest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Logs is a [slog.Handler] that keeps every record, for tests that check
// what a component logs, how often, and with which attributes. Give it to
// the component as slog.New(logs). The zero value is ready to use.
//
// Each record is kept as its level, its message, and its line: the record
// as [slog.TextHandler] writes it, without the time, attributes added with
// Logger.With and groups included, such as
//
//	level=WARN msg="weight 0" policy=weighted_round_robin address=a
//
// A Logs is safe for concurrent use: components log from their own
// goroutines while the test reads or waits.
type Logs struct {
	mu      sync.Mutex
	records []logRecord
	arrived signal
}

type logRecord struct {
	level slog.Level
	msg   string
	line  string
}

// logsHandler is a Logs seen through Logger.With and WithGroup: wrap
// replays those calls on the text handler that formats each line.
type logsHandler struct {
	logs *Logs
	wrap []func(slog.Handler) slog.Handler
}

// Enabled reports true: every level is kept.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps r.
func (l *Logs) Handle(ctx context.Context, r slog.Record) error {
	return logsHandler{logs: l}.Handle(ctx, r)
}

// WithAttrs returns a handler that keeps records in l with attrs added.
func (l *Logs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logsHandler{logs: l}.WithAttrs(attrs)
}

// WithGroup returns a handler that keeps records in l with their
// attributes in the group name.
func (l *Logs) WithGroup(name string) slog.Handler {
	return logsHandler{logs: l}.WithGroup(name)
}

func (h logsHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h logsHandler) Handle(ctx context.Context, r slog.Record) error {
	var buf bytes.Buffer
	var th slog.Handler = slog.NewTextHandler(&buf, nil)
	for _, w := range h.wrap {
		th = w(th)
	}
	r.Time = time.Time{} // the text handler leaves a zero time out
	if err := th.Handle(ctx, r); err != nil {
		return err
	}
	h.logs.add(logRecord{level: r.Level, msg: r.Message, line: strings.TrimSuffix(buf.String(), "\n")})
	return nil
}

func (h logsHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(func(th slog.Handler) slog.Handler { return th.WithAttrs(attrs) })
}

func (h logsHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(func(th slog.Handler) slog.Handler { return th.WithGroup(name) })
}

func (h logsHandler) with(w func(slog.Handler) slog.Handler) slog.Handler {
	return logsHandler{logs: h.logs, wrap: append(slices.Clip(h.wrap), w)}
}

func (l *Logs) add(r logRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r)
	l.arrived.broadcast()
}

// Count returns how many records of at least level minLevel have a
// message containing substr.
func (l *Logs) Count(minLevel slog.Level, substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if r.level >= minLevel && strings.Contains(r.msg, substr) {
			n++
		}
	}
	return n
}

// Lines returns every record's line, in the order they were logged.
func (l *Logs) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.records))
	for i, r := range l.records {
		out[i] = r.line
	}
	return out
}

// String returns every record's line, each ending in a newline.
func (l *Logs) String() string {
	var b strings.Builder
	for _, line := range l.Lines() {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// Wait waits until n lines contain every one of substrs and returns the
// n-th, for a component that logs from its own goroutine (a test that
// waited for the line "timer started" may then advance a mock clock past
// that timer). When ctx ends first, it returns an error with how many
// lines matched.
func (l *Logs) Wait(ctx context.Context, n int, substrs ...string) (string, error) {
	for {
		l.mu.Lock()
		k := 0
		for _, r := range l.records {
			if containsAll(r.line, substrs) {
				if k++; k == n {
					l.mu.Unlock()
					return r.line, nil
				}
			}
		}
		if err := l.arrived.wait(ctx, &l.mu); err != nil {
			return "", fmt.Errorf("lbtest: %d of the %d log lines wanted contain %q: %w", k, n, substrs, err)
		}
	}
}

func containsAll(s string, substrs []string) bool {
	for _, sub := range substrs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
