// Command xdsdemo shows lbkit following an xDS management server.
//
// It starts eight HTTP backends on 127.0.0.1 and a real go-control-plane
// management server in the process, and sends steady traffic through an
// lbkit channel whose target is xds:///demo: the xds resolver follows the
// listener "demo" over ADS (LDS), its route configuration "demo-routes"
// (RDS) and the clusters the routes name (CDS and EDS), and publishes one
// xds_routing_experimental tree over each cluster's priority →
// weighted_target → endpoint-policy tree. Until v8 the route sends every
// request to the cluster "stable" (backends a-1 to c-1); its cluster
// "canary" (k-1, k-2) then gets a share. The demo pushes snapshots on a
// script:
//
//   - v1: stable's zones a and b weighted 1:1 in priority 0, zone c the
//     backup in priority 1;
//   - v2: zone b's weight 1 → 4;
//   - v3: b-3 added to zone b, b-2 draining;
//   - v4: zone c promoted to priority 0 and zones a and b moved to
//     priority 1 (failover by configuration);
//   - v5: a bad snapshot (an address listed twice): lbkit NACKs it with
//     the error's detail and the traffic stays where v4 put it;
//   - v6: v1 again;
//   - a-1 turns slow (weighted round robin keeps sending it its share),
//     then v7: the cluster's lb_policy becomes LEAST_REQUEST, which steers
//     traffic off a-1;
//   - v8, v9, v10: a canary rollout by route pushes: the route splits its
//     requests between the weighted clusters stable and canary 90:10
//     (v8 also makes a-1 fast again and puts stable back on round robin),
//     then 50:50, then 0:100; the split is an exact EDF over the weights,
//     so the table's k-1 and k-2 columns take 10%, 50%, then all of the
//     requests.
//
// It prints a table every second (each push is an event of its row) and
// ends with a summary that says, for each push, how long the traffic took
// to follow it and when lbkit ACKed or NACKed it (the endpoints up to v7,
// the route configuration from v8), and the shares of priority 0 against
// the weights of each snapshot (times the cluster's weight in the
// split). It also writes an SVG timeline.
//
// Usage:
//
//	xdsdemo [-duration 30s] [-rate 300] [-svg file] [-debug addr]
//
// While it runs, it serves the channel's debug page on -debug, by default a
// free port of 127.0.0.1, and prints its URL. Bad flags print one line and
// exit with status 2.
package main

import (
	"context"
	"io"
	"time"

	"github.com/lbkit/lbkit/demo"
)

func main() { demo.Main("xdsdemo", run) }

// minDuration is the shortest run whose script has room for each push.
const minDuration = 3 * time.Second

func parseFlags(args []string) (demo.Options, error) {
	var o demo.Options
	if err := o.ParseFlags("xdsdemo", "usage: xdsdemo [-duration 30s] [-rate 300] [-svg file] [-debug addr]", args, nil); err != nil {
		return o, err
	}
	if o.Duration < minDuration {
		return o, demo.Usagef("-duration %v: the scripted demo needs at least %v", o.Duration, minDuration)
	}
	return o, nil
}

// run parses args, runs the demo, prints to out and returns the summary.
func run(ctx context.Context, args []string, out io.Writer) (*demo.Summary, error) {
	o, err := parseFlags(args)
	if err != nil {
		return nil, err
	}
	sc, err := newScenario(o)
	if err != nil {
		return nil, err
	}
	defer sc.close()
	return sc.Run(ctx, out)
}
