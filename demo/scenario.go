package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/lbkit/lbkit/adapters/nethttp"
	"github.com/lbkit/lbkit/conn"
)

// Scenario is what one run sends traffic to, and what it does meanwhile.
// Set its fields before [Scenario.Run]; Run does not change them, and no
// field may change while it runs except through a step.
type Scenario struct {
	// Name is the demo's name, which prefixes its messages.
	Name string
	// Options are the run's duration, rate, timeline path and debug page.
	Options Options
	// Target and ChannelOptions make the channel.
	Target         string
	ChannelOptions []conn.Option
	// About, if not empty, is what the run's first line says instead of
	// Target: what the channel reaches in words a user can act on, when
	// Target's scheme is private to the demo, and the settings the demo
	// tuned away from the defaults.
	About string
	// Backends names the table's columns, in order; empty: the backends
	// are discovered as traffic arrives (named by address).
	Backends []string
	// NameOf maps a backend's address (host:port) to its name; an address
	// it lacks is named by itself.
	NameOf map[string]string
	// Topology is what the traffic should follow from the start; a step
	// may replace it.
	Topology Topology
	// Script is what the run does, in order of Step.At.
	Script []Step
	// Monitor, if not nil, adds to the table what the script caused and
	// the traffic does not show.
	Monitor Monitor
}

// Step is something the script does at a point of the run.
type Step struct {
	// At is when, from the start of the traffic; a step at 0 (or before)
	// runs before the traffic starts, which starts when its Do returns.
	At time.Duration
	// Label describes the step in its table row and on the timeline.
	Label string
	// Do does it, on the goroutine that runs the script (the one that
	// calls Monitor); nil for nothing. An error ends the run with that
	// error.
	Do func() error
	// Topology, if not nil, is what the traffic should follow from this
	// step on; the summary gives the shares of each topology separately.
	Topology *Topology
	// Watches time how long after the step the traffic reflected it; they
	// see the requests served until the next step.
	Watches []*Watch
}

// Monitor follows what the script causes that the requests do not show
// (an ejection, a health-check verdict). Its methods are called on the
// goroutine that runs the script, as the steps' Do is.
type Monitor interface {
	// Tick is called once a second, before the second's row is printed: it
	// returns what happened since the last call ("" for nothing) and
	// whether a backend was failing or ejected during the second (or a
	// step made it so), which puts the second's shares off.
	Tick() (events string, disturbed bool)
	// Notes returns the summary's lines about what it followed.
	Notes() []string
}

// name returns the name of the backend at addr.
func (s *Scenario) name(addr string) string {
	if name := s.NameOf[addr]; name != "" {
		return name
	}
	return addr
}

// Run sends the traffic, plays the script, prints the table and the
// summary to out, writes the timeline, and returns the summary. A target
// the channel refuses or a debug address it cannot listen on is a
// [*UsageError].
func (s *Scenario) Run(ctx context.Context, out io.Writer) (*Summary, error) {
	ch, err := conn.New(s.Target, s.ChannelOptions...)
	if err != nil {
		return nil, Usagef("%v", err)
	}
	defer ch.Close()
	if s.Options.Debug != "" {
		stop, err := ServeDebugPage(s.Name, s.Options.Debug, ch, out)
		if err != nil {
			return nil, Usagef("-debug: %v", err)
		}
		defer stop()
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	tr := &nethttp.Transport{Channel: ch, Base: base}
	defer tr.CloseIdleConnections()
	rec := newRecorder(tr, s.name)
	client := &http.Client{Transport: rec, Timeout: 2 * time.Second}

	// The channel leaves IDLE now, not at the first request: a step
	// before the traffic may wait for what the channel does (the xDS demo
	// waits for lbkit's answer to its first snapshot).
	ch.Connect()
	p := &player{s: s, rec: rec, ch: ch, out: out, start: time.Now(), phases: []phase{{topology: s.Topology}}}
	script := s.Script
	for len(script) > 0 && script[0].At <= 0 {
		if err := p.step(script[0]); err != nil {
			return nil, err
		}
		script = script[1:]
	}
	// The traffic, and the clock of the steps' At, start once the steps
	// before the traffic are done (one may wait for what it caused).
	p.start = time.Now()
	runCtx, cancel := context.WithTimeout(ctx, s.Options.Duration)
	defer cancel()
	p.atStart = len(p.phases) - 1
	var wg sync.WaitGroup
	s.startLoad(runCtx, &wg, client, rec)

	about := s.About
	if about == "" {
		about = s.Target
	}
	fmt.Fprintf(out, "%s: %s, %d requests/s for %v\n", s.Name, about, s.Options.Rate, s.Options.Duration)
	s.printHeader(out)
	err = p.play(runCtx, script)
	cancel()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	tl := &timeline{Backends: s.Backends, Seconds: p.seconds}
	if len(s.Backends) == 0 {
		tl.Backends = discovered(tl)
	}
	sum := s.summarize(tl, p.phases)
	sum.Watches = rec.results()
	sum.Late = p.late
	if s.Monitor != nil {
		sum.Notes = s.Monitor.Notes()
	}
	if err := writeSVGFile(s.Options.SVGPath, tl); err != nil {
		return nil, err
	}
	sum.SVGPath = s.Options.SVGPath
	printSummary(out, sum)
	return sum, nil
}

// phase is one topology and the label of the step that set it.
type phase struct {
	label    string
	topology Topology
}

// player plays a run's script and takes its seconds, on one goroutine.
type player struct {
	s     *Scenario
	rec   *recorder
	ch    *conn.Channel
	out   io.Writer
	start time.Time

	phases  []phase  // the topologies in force one after the other
	seconds []second // the rows so far
	event   string   // what happened in the current second
	atStart int      // the phase in force when the current second began
	late    time.Duration
}

// step does st and starts its watches and topology.
func (p *player) step(st Step) error {
	p.late = max(p.late, time.Since(p.start.Add(st.At)))
	now := time.Now() // the watches time from the step, before Do's waits
	if st.Do != nil {
		if err := st.Do(); err != nil {
			return err
		}
	}
	p.rec.step(st.Watches, now)
	if st.Topology != nil {
		p.phases = append(p.phases, phase{label: st.Label, topology: *st.Topology})
	}
	p.event = joinEvents(p.event, st.Label)
	return nil
}

// play runs script and prints a row every second until ctx ends or a
// step fails.
func (p *player) play(ctx context.Context, script []Step) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var next <-chan time.Time
		stop := func() bool { return false }
		if len(script) > 0 {
			timer := time.NewTimer(time.Until(p.start.Add(script[0].At)))
			next, stop = timer.C, timer.Stop
		}
		select {
		case <-ctx.Done():
			stop()
			// The run's deadline and its last second's tick fall due
			// together, and a busy machine may deliver the deadline
			// first: that second's row is due all the same.
			if due := int(time.Since(p.start) / time.Second); len(p.seconds) < due {
				p.tick()
			}
			return nil
		case <-next:
			if err := p.step(script[0]); err != nil {
				return err
			}
			script = script[1:]
		case <-tick.C:
			stop()
			p.tick()
		}
	}
}

// tick takes the second that ends and prints its row. Its priority is
// the one that served most by the topology in force when the second
// began; its phase, the one in force at its end.
func (p *player) tick() {
	counts, errs := p.rec.take()
	sec := second{At: time.Since(p.start).Round(time.Second), Counts: counts, Errors: errs, State: p.ch.State(),
		Priority: dominantPriority(counts, p.phases[p.atStart].topology.PriorityOf), Phase: len(p.phases) - 1}
	p.atStart = sec.Phase
	if m := p.s.Monitor; m != nil {
		var more string
		more, sec.Disturbed = m.Tick()
		p.event = joinEvents(p.event, more)
	}
	sec.Event, p.event = p.event, ""
	p.seconds = append(p.seconds, sec)
	p.s.printRow(p.out, sec)
}

// startLoad runs workers that together send Options.Rate requests per
// second until ctx ends.
func (s *Scenario) startLoad(ctx context.Context, wg *sync.WaitGroup, client *http.Client, rec *recorder) {
	workers := min(16, s.Options.Rate)
	interval := time.Duration(float64(time.Second) * float64(workers) / float64(s.Options.Rate))
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

// discovered lists the backends seen, for runs without named backends.
func discovered(tl *timeline) []string {
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

// writeSVGFile writes the timeline to path.
func writeSVGFile(path string, tl *timeline) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the timeline: %w", err)
	}
	if err := writeSVG(f, tl); err != nil {
		f.Close()
		return fmt.Errorf("writing the timeline: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the timeline: %w", err)
	}
	return nil
}

// joinEvents joins two event labels of one second.
func joinEvents(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
