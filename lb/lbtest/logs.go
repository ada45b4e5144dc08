package lbtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Logs is a [slog.Handler] that keeps the message and level of every
// record, for tests that check what a component logs and how often. The
// zero value is ready to use; it is safe for concurrent use.
type Logs struct {
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	level slog.Level
	msg   string
}

// Enabled reports true: every level is kept.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps r's level and message.
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, logRecord{r.Level, r.Message})
	return nil
}

// WithAttrs returns l: attributes are not kept.
func (l *Logs) WithAttrs([]slog.Attr) slog.Handler { return l }

// WithGroup returns l: groups are not kept.
func (l *Logs) WithGroup(string) slog.Handler { return l }

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
