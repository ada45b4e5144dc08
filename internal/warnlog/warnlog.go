// Package warnlog is the logger lbkit's entry points use when the user
// gives none: WARN and ERROR records go to [slog.Default]'s handler, so a
// mistake (a misspelt config key, a refused config, a failing resolver) is
// seen by a user who configured nothing, and the routine INFO and DEBUG
// records are dropped. conn.New and the grpc-go adapter's builder use it.
package warnlog

import (
	"context"
	"log/slog"
)

// Default returns a logger passing the records at WARN and above to the
// handler of [slog.Default] as it is when Default is called. It is safe
// for concurrent use, as that handler is.
func Default() *slog.Logger { return slog.New(warnings{slog.Default().Handler()}) }

// warnings passes h the records at WARN and above.
type warnings struct{ h slog.Handler }

// Enabled reports whether l is WARN or above and h enables it.
func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.h.Enabled(ctx, l)
}

// Handle passes r to h.
func (w warnings) Handle(ctx context.Context, r slog.Record) error { return w.h.Handle(ctx, r) }

// WithAttrs returns the same filter over h.WithAttrs(attrs).
func (w warnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnings{w.h.WithAttrs(attrs)}
}

// WithGroup returns the same filter over h.WithGroup(name).
func (w warnings) WithGroup(name string) slog.Handler { return warnings{w.h.WithGroup(name)} }
