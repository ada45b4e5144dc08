package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"
)

// UsageError is a problem with the flags or the input: a demo prints it on
// one line and exits with status 2.
type UsageError struct{ Err error }

// Error returns the underlying error's message.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a [*UsageError] formatted as fmt.Errorf does.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Options are the settings every demo shares.
type Options struct {
	// Duration is how long traffic is sent; -duration, 30 s by default.
	Duration time.Duration
	// Rate is the requests sent per second; -rate, 300 by default.
	Rate int
	// SVGPath is where the timeline is written; -svg, by default
	// NAME-timeline.svg in the temporary directory.
	SVGPath string
	// Debug is the address of the channel's debug page, "" for none;
	// -debug, a free port of 127.0.0.1 by default.
	Debug string
}

// ParseFlags parses args as the flags of the demo called name: the shared
// ones into o, and those extra declares on the flag set (nil for none).
// It returns a [*UsageError] for -h (usage), a bad flag, a positional
// argument, or a setting [Options.Check] refuses.
func (o *Options) ParseFlags(name, usage string, args []string, extra func(*flag.FlagSet)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.addFlags(fs, name)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Usagef("%s", usage)
		}
		return Usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (flags only)", fs.Arg(0))
	}
	return o.Check()
}

// addFlags declares -duration, -rate, -svg and -debug on fs, storing into
// o, for the demo called name.
func (o *Options) addFlags(fs *flag.FlagSet, name string) {
	fs.DurationVar(&o.Duration, "duration", 30*time.Second, "how long to send traffic")
	fs.IntVar(&o.Rate, "rate", 300, "requests per second")
	fs.StringVar(&o.SVGPath, "svg", filepath.Join(os.TempDir(), name+"-timeline.svg"), "where to write the SVG timeline")
	fs.StringVar(&o.Debug, "debug", "127.0.0.1:0", "serve the channel's debug page (conn/debugpage) on this address; empty for none")
}

// Check returns a [*UsageError] naming the first bad setting: a rate
// outside 1..100000, a duration under a second, an empty SVG path.
func (o Options) Check() error {
	switch {
	case o.Rate < 1 || o.Rate > 100000:
		return Usagef("-rate %d: want 1..100000 requests per second", o.Rate)
	case o.Duration < time.Second:
		return Usagef("-duration %v: want at least 1s", o.Duration)
	case o.SVGPath == "":
		return Usagef("-svg: empty path")
	}
	return nil
}

// Main runs a demo's command: run gets a context that ends on an interrupt,
// the arguments and standard output; what it returns besides the error (a
// summary, for the demo's tests) is dropped. Main exits with status 2 after
// a [*UsageError], 1 after any other error, each printed as one line on
// standard error after the command's name; it returns when run succeeds.
func Main[T any](name string, run func(ctx context.Context, args []string, out io.Writer) (T, error)) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	if errors.As(err, new(*UsageError)) {
		os.Exit(2)
	}
	os.Exit(1)
}
