// Command lbdemo shows lbkit balancing real HTTP traffic.
//
// By default it starts six HTTP backends on 127.0.0.1 described by an
// embedded Envoy ClusterLoadAssignment: a primary priority with two
// localities weighted 1:3 (their endpoints weighted too) and a backup
// priority. It sends steady traffic through an lbkit channel (the eds
// resolver, priority → outlier_detection → weighted_target →
// weighted_round_robin) and the net/http adapter, prints a table every
// second, makes one primary server answer 503 for a while (outlier
// detection ejects it, then returns it to service), stops the primary's
// servers (traffic fails over to the backup), starts them again (traffic
// returns), and ends with a summary of shares against weights, of the
// failover times and of the ejection. It also writes an SVG timeline.
//
// Usage:
//
//	lbdemo [-duration 30s] [-rate 300] [-svg file] [-debug addr] [-cla file | -target target]
//
// While it runs, it serves the channel's debug page (the balancer tree,
// the active priority, every endpoint's state) on -debug, by default a free
// port of 127.0.0.1, and prints its URL.
//
// With -cla, traffic goes to the endpoints of your own assignment (no
// servers are started or stopped); with -target, to any lbkit target such
// as dns:///example.com:80. Bad flags or a bad assignment print one line
// and exit with status 2.
package main

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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	_, err := run(ctx, os.Args[1:], os.Stdout)
	var usage *usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "lbdemo: %v\n", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "lbdemo: %v\n", err)
		os.Exit(1)
	}
}

// usageError is a problem with the flags or the input files: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// options are the parsed flags.
type options struct {
	duration time.Duration
	rate     int
	svgPath  string
	claPath  string
	target   string
	debug    string // address of the debug page; "" for none
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("lbdemo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o options
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long to send traffic (the scripted demo needs at least 3s)")
	fs.IntVar(&o.rate, "rate", 300, "requests per second")
	fs.StringVar(&o.svgPath, "svg", filepath.Join(os.TempDir(), "lbdemo-timeline.svg"), "where to write the SVG timeline")
	fs.StringVar(&o.claPath, "cla", "", "send traffic to the endpoints of this ClusterLoadAssignment JSON file instead of the built-in scenario")
	fs.StringVar(&o.debug, "debug", "127.0.0.1:0", "serve the channel's debug page (conn/debugpage) on this address; empty for none")
	fs.StringVar(&o.target, "target", "", "send traffic to this lbkit target (for example dns:///example.com:80) instead of the built-in scenario")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, usagef("usage: lbdemo [-duration 30s] [-rate 300] [-svg file] [-debug addr] [-cla file | -target target]")
		}
		return o, usagef("%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return o, usagef("unexpected argument %q (flags only)", fs.Arg(0))
	case o.claPath != "" && o.target != "":
		return o, usagef("-cla and -target cannot be used together")
	case o.rate < 1 || o.rate > 100000:
		return o, usagef("-rate %d: want 1..100000 requests per second", o.rate)
	case o.duration < time.Second:
		return o, usagef("-duration %v: want at least 1s", o.duration)
	case o.claPath == "" && o.target == "" && o.duration < 3*time.Second:
		return o, usagef("-duration %v: the scripted demo needs at least 3s", o.duration)
	case o.svgPath == "":
		return o, usagef("-svg: empty path")
	}
	return o, nil
}

// run parses args, runs the demo, prints to out and returns the summary.
func run(ctx context.Context, args []string, out io.Writer) (*summary, error) {
	o, err := parseFlags(args)
	if err != nil {
		return nil, err
	}
	var sc *scenario
	switch {
	case o.target != "":
		sc, err = targetScenario(o)
	case o.claPath != "":
		sc, err = claFileScenario(o)
	default:
		sc, err = builtinScenario(o)
	}
	if err != nil {
		return nil, err
	}
	defer sc.close()
	return sc.run(ctx, out)
}
