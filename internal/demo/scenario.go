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
	// At is when, from the start of the traffic.
	At time.Duration
	// Label describes the step in its table row and on the timeline.
	Label string
	// Do does it, on the goroutine that runs the script (the one that
	// calls Monitor). An error ends the run with that error.
	Do func() error
	// Topology, if not nil, is what the traffic should follow from this
	// step on; the summary gives the shares of each topology separately.
	Topology *Topology
	// Watches time how long after the step the traffic reflected it.
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

	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, s.Options.Duration)
	defer cancel()
	var wg sync.WaitGroup
	s.startLoad(runCtx, &wg, client, rec)

	fmt.Fprintf(out, "%s: %s, %d requests/s for %v\n", s.Name, s.Target, s.Options.Rate, s.Options.Duration)
	s.printHeader(out)
	tl, phases, err := s.play(runCtx, cancel, start, ch, rec, out)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if len(s.Backends) == 0 {
		tl.Backends = discovered(tl)
	}
	sum := s.summarize(tl, phases)
	sum.Watches = rec.results()
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

// play runs the script and prints a row every second until ctx ends; it
// returns the timeline and the topologies in force one after the other.
func (s *Scenario) play(ctx context.Context, cancel func(), start time.Time, ch *conn.Channel, rec *recorder, out io.Writer) (*timeline, []phase, error) {
	tl := &timeline{Backends: s.Backends}
	phases := []phase{{topology: s.Topology}}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	script := s.Script
	var event string
	for {
		var next <-chan time.Time
		var timer *time.Timer
		if len(script) > 0 {
			timer = time.NewTimer(time.Until(start.Add(script[0].At)))
			next = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return tl, phases, nil
		case <-next:
			st := script[0]
			script = script[1:]
			if err := st.Do(); err != nil {
				cancel()
				return nil, nil, err
			}
			now := time.Now()
			for _, w := range st.Watches {
				rec.watch(w, now)
			}
			if st.Topology != nil {
				phases = append(phases, phase{label: st.Label, topology: *st.Topology})
			}
			event = joinEvents(event, st.Label)
		case <-tick.C:
			if timer != nil {
				timer.Stop()
			}
			sec := s.sample(rec, ch, time.Since(start).Round(time.Second), phases)
			if s.Monitor != nil {
				var more string
				more, sec.Disturbed = s.Monitor.Tick()
				event = joinEvents(event, more)
			}
			sec.Event, event = event, ""
			tl.Seconds = append(tl.Seconds, sec)
			s.printRow(out, sec)
		}
	}
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

// sample takes one second's counts.
func (s *Scenario) sample(rec *recorder, ch *conn.Channel, at time.Duration, phases []phase) second {
	counts, errs := rec.take()
	last := len(phases) - 1
	return second{At: at, Counts: counts, Errors: errs, State: ch.State(),
		Priority: dominantPriority(counts, phases[last].topology.PriorityOf), Phase: last}
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
