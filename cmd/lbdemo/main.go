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
	"flag"
	"io"
	"time"

	"github.com/lbkit/lbkit/demo"
)

func main() { demo.Main("lbdemo", run) }

// options are the parsed flags.
type options struct {
	demo.Options
	claPath string
	target  string
}

func parseFlags(args []string) (options, error) {
	var o options
	err := o.ParseFlags("lbdemo", "usage: lbdemo [-duration 30s] [-rate 300] [-svg file] [-debug addr] [-cla file | -target target]", args, func(fs *flag.FlagSet) {
		fs.StringVar(&o.claPath, "cla", "", "send traffic to the endpoints of this ClusterLoadAssignment JSON file instead of the built-in scenario")
		fs.StringVar(&o.target, "target", "", "send traffic to this lbkit target (for example dns:///example.com:80) instead of the built-in scenario")
	})
	switch {
	case err != nil:
		return o, err
	case o.claPath != "" && o.target != "":
		return o, demo.Usagef("-cla and -target cannot be used together")
	}
	if o.claPath == "" && o.target == "" && o.Duration < 3*time.Second {
		return o, demo.Usagef("-duration %v: the scripted demo needs at least 3s", o.Duration)
	}
	return o, nil
}

// summary is what a run found: the demo's summary and what became of the
// backend the script made fail.
type summary struct {
	*demo.Summary
	Outlier outlierResult
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
	sum, err := sc.Run(ctx, out)
	if err != nil {
		return nil, err
	}
	return &summary{Summary: sum, Outlier: sc.monitor.result()}, nil
}
