package main

import (
	"context"
	_ "embed"
	"fmt"
	"github.com/lbkit/lbkit/internal/httpbackend"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
	"github.com/lbkit/lbkit/lb/backoff"
	"github.com/lbkit/lbkit/lb/resolver/eds"
)

//go:embed cla.json
var claTemplate string

// scenario is what one run sends traffic to, and what it does meanwhile.
type scenario struct {
	opts       options
	target     string
	chanOpts   []conn.Option
	backends   []*httpbackend.Backend // started by the demo; nil for -cla and -target
	names      []string               // table columns; empty: discovered as traffic arrives
	nameOf     map[string]string      // address → column name
	priorityOf map[string]string      // column name → "p0", "p1", …
	want       map[string]float64
	script     []step
	tmpDir     string
	// odLog collects outlier detection's ejections and returns; nil when
	// the scenario runs no outlier detection.
	odLog *odLog
}

// step is something the script does at a point of the run.
type step struct {
	at    time.Duration
	label string
	do    func() error
	// watch names the priority whose first success after this step is
	// timed ("" for none).
	watch string
	// outlier names the backend this step makes fail: its ejection and
	// return are timed from the step. recovers names the backend this
	// step makes healthy again.
	outlier, recovers string
	// hangs names the backend this step makes hang (accept requests and
	// never answer), for the health check to drain; answers, the one it
	// makes answer again.
	hangs, answers string
}

// demoBackoff reconnects quickly so the demo's phases are short. A
// production channel keeps gRPC's default (1 s growing to 120 s).
var demoBackoff = backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}

// builtinScenario starts the six backends, writes the embedded assignment
// with their ports, and scripts the failover.
func builtinScenario(o options) (*scenario, error) {
	sc := &scenario{opts: o, nameOf: map[string]string{}, priorityOf: map[string]string{}}
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
		sc.nameOf[b.Addr()] = b.Name()
		sc.names = append(sc.names, b.Name())
	}
	if err := sc.learn([]byte(text)); err != nil {
		sc.close()
		return nil, fmt.Errorf("embedded assignment: %w", err)
	}
	sc.target = odScheme + ":///" + filepath.ToSlash(strings.TrimPrefix(path, "/"))
	sc.odLog = &odLog{}
	sc.chanOpts = []conn.Option{
		conn.WithBackoff(demoBackoff),
		conn.WithResolver(odEDS{config: odConfigFor(o.duration)}),
		conn.WithLogger(slog.New(sc.odLog)),
		conn.WithHealthCheck(conn.HealthCheck{
			Checker:            conn.HTTPHealthCheck{Path: "/healthz"},
			Interval:           o.duration / 150,
			Timeout:            o.duration / 150,
			UnhealthyThreshold: 2,
			HealthyThreshold:   1,
		}),
	}
	primaries := sc.backends[:4]
	flaky, hung := sc.backends[3], sc.backends[0]
	third := o.duration / 3
	sc.script = []step{
		{at: o.duration / 12, label: flaky.Name() + " answers 503", outlier: flaky.Name(), do: func() error {
			flaky.SetFailing(true)
			return nil
		}},
		{at: o.duration / 6, label: flaky.Name() + " healthy again", recovers: flaky.Name(), do: func() error {
			flaky.SetFailing(false)
			return nil
		}},
		{at: o.duration / 5, label: hung.Name() + " hangs", hangs: hung.Name(), do: func() error {
			hung.SetHanging(true)
			return nil
		}},
		{at: 3 * o.duration / 10, label: hung.Name() + " answers again", answers: hung.Name(), do: func() error {
			hung.SetHanging(false)
			return nil
		}},
		{at: third, label: "primary stopped", watch: "p1", do: func() error {
			for _, b := range primaries {
				b.Stop()
			}
			return nil
		}},
		{at: 2 * third, label: "primary restarted", watch: "p0", do: func() error {
			for _, b := range primaries {
				if err := b.Restart(); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	return sc, nil
}

// claFileScenario sends traffic to the endpoints of the user's assignment.
func claFileScenario(o options) (*scenario, error) {
	data, err := os.ReadFile(o.claPath)
	if err != nil {
		return nil, usagef("-cla: %v", err)
	}
	sc := &scenario{opts: o, nameOf: map[string]string{}, priorityOf: map[string]string{}}
	if err := sc.learn(data); err != nil {
		return nil, usagef("-cla %s: %v", o.claPath, err)
	}
	abs, err := filepath.Abs(o.claPath)
	if err != nil {
		return nil, usagef("-cla: %v", err)
	}
	sc.target = "eds:///" + filepath.ToSlash(strings.TrimPrefix(abs, "/"))
	return sc, nil
}

// targetScenario sends traffic to any target.
func targetScenario(o options) (*scenario, error) {
	sc := &scenario{opts: o, target: o.target, nameOf: map[string]string{}, priorityOf: map[string]string{}}
	ch, err := conn.New(o.target)
	if err != nil {
		return nil, usagef("-target: %v", err)
	}
	ch.Close()
	return sc, nil
}

// learn reads an assignment's topology: column names, priorities and the
// share each priority-0 endpoint should get (locality weight share times
// endpoint weight share; a missing weight counts 1).
func (sc *scenario) learn(data []byte) error {
	cla, err := eds.Parse(data)
	if err != nil {
		return err
	}
	var n eds.Namer
	if _, err := n.State(cla); err != nil {
		return err
	}
	sc.want = map[string]float64{}
	var localityTotal float64
	for _, l := range cla.Endpoints {
		if l.Priority == 0 {
			localityTotal += float64(l.LoadBalancingWeight)
		}
	}
	for _, l := range cla.Endpoints {
		var endpointTotal float64
		for _, e := range l.LbEndpoints {
			if e.HealthStatus.Usable() {
				endpointTotal += float64(max(e.LoadBalancingWeight, 1))
			}
		}
		for _, e := range l.LbEndpoints {
			addr := net.JoinHostPort(e.Address, fmt.Sprint(e.Port))
			name := sc.nameOf[addr]
			if name == "" {
				name = addr
				sc.nameOf[addr] = addr
			}
			if !slices.Contains(sc.names, name) {
				sc.names = append(sc.names, name)
			}
			sc.priorityOf[name] = fmt.Sprintf("p%d", l.Priority)
			if l.Priority == 0 && l.LoadBalancingWeight > 0 && e.HealthStatus.Usable() {
				sc.want[name] = float64(l.LoadBalancingWeight) / localityTotal * float64(max(e.LoadBalancingWeight, 1)) / endpointTotal
			}
		}
	}
	return nil
}

func (sc *scenario) close() {
	for _, b := range sc.backends {
		b.Stop()
	}
	if sc.tmpDir != "" {
		os.RemoveAll(sc.tmpDir)
	}
}

// share is one endpoint's observed share of its priority's traffic.
type share struct {
	Backend   string
	Want, Got float64
}

// summary is what a run found.
type summary struct {
	Requests, Errors int
	Shares           []share
	MaxShareError    float64 // in percentage points
	FailedOver       bool
	FailoverAfter    time.Duration
	Returned         bool
	ReturnAfter      time.Duration
	Outlier          outlierResult
	SVGPath          string
}

// run sends the traffic, plays the script, prints the table and summary.
func (sc *scenario) run(ctx context.Context, out io.Writer) (*summary, error) {
	ch, err := conn.New(sc.target, sc.chanOpts...)
	if err != nil {
		return nil, usagef("%v", err)
	}
	defer ch.Close()
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	tr := &nethttp.Transport{Channel: ch, Base: base}
	defer tr.CloseIdleConnections()
	rec := newRecorder(tr)
	client := &http.Client{Transport: rec, Timeout: 2 * time.Second}

	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, sc.opts.duration)
	defer cancel()
	var wg sync.WaitGroup
	sc.startLoad(runCtx, &wg, client, rec)

	tl := &timeline{Backends: sc.names}
	var watches []*watch
	fmt.Fprintf(out, "lbdemo: %s, %d requests/s for %v\n", sc.target, sc.opts.rate, sc.opts.duration)
	sc.printHeader(out)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	script := sc.script
	var event string
	var scriptErr error
	var ow *outlierWatch
	disturbed := false
	hanging, calming := false, 0 // a backend hangs; seconds left to settle after it answers
loop:
	for {
		var next <-chan time.Time
		var timer *time.Timer
		if len(script) > 0 {
			timer = time.NewTimer(time.Until(start.Add(script[0].at)))
			next = timer.C
		}
		select {
		case <-runCtx.Done():
			if timer != nil {
				timer.Stop()
			}
			break loop
		case <-next:
			st := script[0]
			script = script[1:]
			if err := st.do(); err != nil {
				scriptErr = err
				cancel()
				break loop
			}
			event = joinEvents(event, st.label)
			switch {
			case st.outlier != "":
				ow = &outlierWatch{name: st.outlier, start: time.Now()}
				disturbed = true
			case st.recovers != "" && ow != nil:
				ow.healthy = true
			case st.hangs != "":
				hanging, disturbed = true, true
			case st.answers != "":
				hanging, calming = false, 2
			}
			if st.watch != "" {
				w := &watch{label: st.label, since: time.Now(), priority: st.watch}
				watches = append(watches, w)
				rec.watch(w, sc)
			}
		case <-tick.C:
			if timer != nil {
				timer.Stop()
			}
			event = joinEvents(event, sc.outlierEvents(ow))
			s := sc.sample(rec, ch, time.Since(start).Round(time.Second), event)
			s.Disturbed = disturbed
			disturbed = ow.disturbed() || hanging || calming > 0
			calming = max(calming-1, 0)
			event = ""
			tl.Seconds = append(tl.Seconds, s)
			sc.printRow(out, tl, s)
		}
	}
	wg.Wait()
	if scriptErr != nil {
		return nil, scriptErr
	}
	if len(sc.names) == 0 {
		tl.Backends = sc.discovered(tl)
	}
	sum := sc.summarize(tl, watches)
	sum.Outlier = ow.result()
	f, err := os.Create(sc.opts.svgPath)
	if err != nil {
		return nil, fmt.Errorf("writing the timeline: %w", err)
	}
	if err := writeSVG(f, tl); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the timeline: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("writing the timeline: %w", err)
	}
	sum.SVGPath = sc.opts.svgPath
	printSummary(out, sum)
	return sum, nil
}

// startLoad runs workers that together send opts.rate requests per second.
func (sc *scenario) startLoad(ctx context.Context, wg *sync.WaitGroup, client *http.Client, rec *recorder) {
	workers := min(16, sc.opts.rate)
	interval := time.Duration(float64(time.Second) * float64(workers) / float64(sc.opts.rate))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://demo.backend/", nil)
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						rec.failed()
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
}

// sample takes one second's counts.
func (sc *scenario) sample(rec *recorder, ch *conn.Channel, at time.Duration, event string) second {
	byAddr, errs := rec.take()
	counts := map[string]int{}
	for addr, n := range byAddr {
		name := sc.nameOf[addr]
		if name == "" {
			name = addr
		}
		counts[name] += n
	}
	return second{At: at, Counts: counts, Errors: errs, State: ch.State(), Priority: dominantPriority(counts, sc.priorityOf), Event: event}
}

// discovered lists the backends seen, for -target runs.
func (sc *scenario) discovered(tl *timeline) []string {
	set := map[string]bool{}
	for _, s := range tl.Seconds {
		for name := range s.Counts {
			set[name] = true
		}
	}
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// summarize computes shares over the seconds served by priority 0 alone in
// steady state (not the first second, nor a second in which the script
// acted or a backend was failing or ejected, nor the one after) and the
// failover times.
func (sc *scenario) summarize(tl *timeline, watches []*watch) *summary {
	sum := &summary{}
	counts := map[string]int{}
	total := 0
	for i, s := range tl.Seconds {
		for _, n := range s.Counts {
			sum.Requests += n
		}
		sum.Errors += s.Errors
		if i == 0 || s.Event != "" || tl.Seconds[i-1].Event != "" || s.Disturbed || tl.Seconds[i-1].Disturbed || !onlyPriority0(s, sc.priorityOf) {
			continue
		}
		for name, n := range s.Counts {
			if _, ok := sc.want[name]; ok {
				counts[name] += n
				total += n
			}
		}
	}
	if total > 0 {
		for _, name := range sc.names {
			want, ok := sc.want[name]
			if !ok {
				continue
			}
			got := float64(counts[name]) / float64(total)
			sum.Shares = append(sum.Shares, share{Backend: name, Want: want, Got: got})
			sum.MaxShareError = math.Max(sum.MaxShareError, 100*math.Abs(got-want))
		}
	}
	for _, w := range watches {
		got, ok := w.result()
		switch w.priority {
		case "p1":
			sum.FailedOver, sum.FailoverAfter = ok, got
		case "p0":
			sum.Returned, sum.ReturnAfter = ok, got
		}
	}
	return sum
}

// onlyPriority0 reports whether every request of s was served by priority 0.
func onlyPriority0(s second, priorityOf map[string]string) bool {
	served := 0
	for name, n := range s.Counts {
		if priorityOf[name] != "p0" {
			return false
		}
		served += n
	}
	return served > 0
}
