package lbtest_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbkit/lbkit/lb/lbtest"
)

func TestLogsKeepLinesWithAttributesAndGroups(t *testing.T) {
	t.Parallel()
	logs := &lbtest.Logs{}
	base := slog.New(logs)
	base.Debug("plain")
	base.With("policy", "p").WithGroup("g").Warn("grouped message", "k", 1)
	base.Info("after", "err", "a b")
	want := []string{
		`level=DEBUG msg=plain`,
		`level=WARN msg="grouped message" policy=p g.k=1`,
		`level=INFO msg=after err="a b"`,
	}
	if got := logs.Lines(); !slices.Equal(got, want) {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := logs.String(); got != strings.Join(want, "\n")+"\n" {
		t.Fatalf("String() = %q", got)
	}
	if n := logs.Count(slog.LevelInfo, "e"); n != 2 {
		t.Fatalf("Count(INFO, e) = %d, want 2 (the WARN and INFO messages)", n)
	}
	if n := logs.Count(slog.LevelDebug, "policy"); n != 0 {
		t.Fatalf("Count matched an attribute: %d, want messages only", n)
	}
}

func TestLogsWait(t *testing.T) {
	t.Parallel()
	logs := &lbtest.Logs{}
	l := slog.New(logs)
	go func() {
		for i := range 3 {
			l.Info("tick", "i", i)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	line, err := logs.Wait(ctx, 2, "tick", "i=")
	if err != nil || line != "level=INFO msg=tick i=1" {
		t.Fatalf("Wait = %q, %v; want the second tick", line, err)
	}
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if _, err := logs.Wait(short, 1, "never logged"); err == nil || !strings.Contains(err.Error(), "0 of the 1") {
		t.Fatalf("Wait for a missing line: %v, want an error counting 0 of 1", err)
	}
}
