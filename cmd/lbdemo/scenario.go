package main

import (
	_ "embed"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/demo"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/lbtest/httpbackend"
)

//go:embed cla.json
var claTemplate string

// scenario is what one run sends traffic to, what it does meanwhile, and
// what it must clean up.
type scenario struct {
	demo.Scenario
	backends []*httpbackend.Backend // started by the demo; nil for -cla and -target
	tmpDir   string
	// monitor follows outlier detection's ejections and the health
	// checks; nil when the scenario runs neither.
	monitor *outlierMonitor
}

// demoBackoff reconnects quickly so the demo's phases are short. A
// production channel keeps conn's default (1 s growing to 10 s).
var demoBackoff = backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}

func newScenario(o options) *scenario {
	return &scenario{Scenario: demo.Scenario{Name: "lbdemo", Options: o.Options, NameOf: map[string]string{}}}
}

// builtinScenario starts the six backends, writes the embedded assignment
// with their ports, and scripts the failover.
func builtinScenario(o options) (*scenario, error) {
	sc := newScenario(o)
	fill := map[string]string{}
	for _, name := range []string{"primary-a1", "primary-a2", "primary-b1", "primary-b2", "backup-1", "backup-2"} {
		b, err := httpbackend.Start(name)
		if err != nil {
			sc.close()
			return nil, err
		}
		sc.backends = append(sc.backends, b)
		fill["${"+name+"}"] = b.Port()
	}
	text := claTemplate
	for k, v := range fill {
		text = strings.ReplaceAll(text, k, v)
	}
	dir, err := os.MkdirTemp("", "lbdemo-")
	if err != nil {
		sc.close()
		return nil, err
	}
	sc.tmpDir = dir
	path := filepath.Join(dir, "cla.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		sc.close()
		return nil, err
	}
	for _, b := range sc.backends {
		sc.NameOf[b.Addr()] = b.Name()
		sc.Backends = append(sc.Backends, b.Name())
	}
	if sc.Topology, err = sc.Learn([]byte(text)); err != nil {
		sc.close()
		return nil, fmt.Errorf("embedded assignment: %w", err)
	}
	sc.Target = odScheme + ":///" + filepath.ToSlash(strings.TrimPrefix(path, "/"))
	// What the private scheme means, and the backoff tuned for short
	// phases, said where the run begins.
	sc.About = fmt.Sprintf("eds:///%s plus outlier detection per priority (added by the demo, as xDS would); "+
		"reconnect backoff %v ×%v to %v (default %v to %v)",
		filepath.ToSlash(strings.TrimPrefix(path, "/")), demoBackoff.BaseDelay, demoBackoff.Multiplier, demoBackoff.MaxDelay,
		backoff.ChannelDefault().BaseDelay, backoff.ChannelDefault().MaxDelay)
	sc.monitor = &outlierMonitor{log: &odLog{}, nameOf: sc.NameOf}
	sc.Monitor = sc.monitor
	d := o.Duration
	sc.ChannelOptions = []conn.Option{
		conn.WithBackoff(demoBackoff),
		conn.WithResolver(odEDS{config: odConfigFor(d)}),
		conn.WithLogger(slog.New(sc.monitor.log)),
		// The checks must drain the hung backend during its hang (d/10,
		// see script): two checks in a row (UnhealthyThreshold) time out
		// within 2*Timeout+Interval. A healthy loopback backend must pass
		// them, also on a machine so loaded that an answer takes a few
		// hundred milliseconds: at d/150 (80 ms for 12 s) every backend
		// was drained now and then under load 15, leaving no undisturbed
		// second to measure the shares in.
		conn.WithHealthCheck(conn.HealthCheck{
			Checker:            conn.HTTPHealthCheck{Path: "/healthz"},
			Interval:           d / 150,
			Timeout:            d / 30,
			UnhealthyThreshold: 2,
			HealthyThreshold:   1,
		}),
	}
	sc.script(d)
	return sc, nil
}

// script makes one primary server answer 503 and recover, another hang
// and answer again, then stops the primary's servers and restarts them.
func (sc *scenario) script(d time.Duration) {
	primaries, m := sc.backends[:4], sc.monitor
	flaky, hung := sc.backends[3], sc.backends[0]
	third := d / 3
	sc.Script = []demo.Step{
		{At: d / 12, Label: flaky.Name() + " answers 503", Do: func() error {
			flaky.SetFailing(true)
			m.failing(flaky.Name())
			return nil
		}},
		{At: d / 6, Label: flaky.Name() + " stops answering 503", Do: func() error {
			flaky.SetFailing(false)
			m.recovered()
			return nil
		}},
		{At: d / 5, Label: hung.Name() + " hangs", Do: func() error {
			hung.SetHanging(true)
			m.hangs()
			return nil
		}},
		{At: 3 * d / 10, Label: hung.Name() + " answers again", Do: func() error {
			hung.SetHanging(false)
			m.answers()
			return nil
		}},
		{At: third, Label: "primary stopped", Do: func() error {
			for _, b := range primaries {
				b.Stop()
			}
			return nil
		}, Watches: []*demo.Watch{{
			Name: "failover", Until: demo.FirstRequestTo(sc.inPriority("p1")...),
			Report: "failover: backup served %v after the primary stopped",
		}}},
		{At: 2 * third, Label: "primary restarted", Do: func() error {
			for _, b := range primaries {
				if err := b.Restart(); err != nil {
					return err
				}
			}
			return nil
		}, Watches: []*demo.Watch{{
			Name: "return", Until: demo.FirstRequestTo(sc.inPriority("p0")...),
			Report: "return: primary served again %v after it restarted",
		}}},
	}
}

// inPriority returns the backends of priority p.
func (sc *scenario) inPriority(p string) []string {
	var names []string
	for _, name := range sc.Backends {
		if sc.Topology.PriorityOf[name] == p {
			names = append(names, name)
		}
	}
	return names
}

// claFileScenario sends traffic to the endpoints of the user's assignment.
func claFileScenario(o options) (*scenario, error) {
	data, err := os.ReadFile(o.claPath)
	if err != nil {
		return nil, demo.Usagef("-cla: %v", err)
	}
	sc := newScenario(o)
	if sc.Topology, err = sc.Learn(data); err != nil {
		return nil, demo.Usagef("-cla %s: %v", o.claPath, err)
	}
	abs, err := filepath.Abs(o.claPath)
	if err != nil {
		return nil, demo.Usagef("-cla: %v", err)
	}
	sc.Target = "eds:///" + filepath.ToSlash(strings.TrimPrefix(abs, "/"))
	return sc, nil
}

// targetScenario sends traffic to any target.
func targetScenario(o options) (*scenario, error) {
	sc := newScenario(o)
	sc.Target = o.target
	ch, err := conn.New(o.target)
	if err != nil {
		return nil, demo.Usagef("-target: %v", err)
	}
	ch.Close()
	return sc, nil
}

func (sc *scenario) close() {
	for _, b := range sc.backends {
		b.Stop()
	}
	if sc.tmpDir != "" {
		os.RemoveAll(sc.tmpDir)
	}
}
