package conn

import (
	"context"
	"log/slog"
)

// DefaultLogger returns the logger [New] uses when [WithLogger] is not
// given: it passes the records at WARN and above (a misspelt config key, a
// refused config, a failing resolver) to the handler of [slog.Default] as
// it is when DefaultLogger is called, and drops the routine INFO and DEBUG
// records. Adapters that build lbkit's policies without a channel (the
// grpc-go adapter's builder) use it for the same default. The logger is
// safe for concurrent use, as that handler is.
func DefaultLogger() *slog.Logger { return slog.New(warnings{slog.Default().Handler()}) }

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
