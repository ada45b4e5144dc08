package slowstart

import (
	"math"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/lbkit/lbkit/lb"
)

// Resolution is how many weight units a unit of base weight becomes while
// an endpoint ramps ([Tracker.Resolution]): factors are applied to
// integer weights with this precision, 0.1% of a weight.
const Resolution = 1000

// The bounds of [Config.Interval].
const (
	// MinInterval is the shortest time between two re-weightings.
	MinInterval = 100 * time.Millisecond
	// MaxInterval is the longest time between two re-weightings.
	MaxInterval = time.Second
)

// Interval returns how often a [Tracker] re-weights while an endpoint
// ramps: a hundredth of the window, at least [MinInterval] and at most
// [MaxInterval]. A factor is therefore at most one interval old; in a
// linear ramp that is at most 1% of the weight.
func (c Config) Interval() time.Duration {
	return min(max(c.SlowStartWindow/100, MinInterval), MaxInterval)
}

// Tracker keeps the start of each endpoint in its slow start window and
// tells the policy when to re-weight. K identifies an endpoint (the
// policy's endpoint record, say). Create it with [NewTracker]; with no
// config ([Tracker.SetConfig] not called, or called with nil) it does
// nothing and every factor is 1.
//
// Every method must be called inside the tree's serialized calls; the
// callback runs there too. A Tracker holds no goroutine: its one timer is
// the scheduler's, and closing the balancer's scope stops it.
type Tracker[K comparable] struct {
	sched   lb.Scheduler
	clk     clock.Clock
	refresh func()

	// cfg is the slow start in force, or nil.
	cfg *Config
	// since holds the start of every endpoint that may still be in its
	// window; entries whose window has passed are dropped at each tick.
	since map[K]time.Time
	// timer is the pending tick, or nil when no endpoint ramps.
	timer lb.Timer
	// pickers is the counter RecordPicker adds to, or nil.
	pickers lb.Counter
}

// NewTracker returns a tracker on opts' scheduler and clock (the real
// clock when opts.Clock is nil) that calls refresh, inside the tree's
// serialized calls, every [Config.Interval] while an endpoint is in its
// window, and once after the last one leaves it. refresh should publish a
// picker built with the current factors.
func NewTracker[K comparable](opts lb.BuildOptions, refresh func()) *Tracker[K] {
	clk := opts.Clock
	if clk == nil {
		clk = clock.New()
	}
	return &Tracker[K]{sched: opts.Scheduler, clk: clk, refresh: refresh, since: make(map[K]time.Time)}
}

// SetConfig puts c in force (nil: no slow start). Endpoints already in
// their window keep their start and follow c's ramp from the next picker;
// endpoints READY before slow start was configured do not ramp. Setting
// nil forgets every start and stops the ticks.
//
// An invalid c ([Config.Validate], as a Config built in Go may be) changes
// nothing and returns a [*lb.ConfigError] whose path starts with
// "slowStartConfig", for the policy to reject its update with.
func (t *Tracker[K]) SetConfig(c *Config) error {
	if c == nil {
		t.cfg = nil
		clear(t.since)
		t.stop()
		return nil
	}
	if err := c.Validate(); err != nil {
		return lb.PrefixConfigError("slowStartConfig", err)
	}
	cp := *c
	t.cfg = &cp
	return nil
}

// Ready records that the endpoint k became READY now: its ramp starts
// over. It does nothing without a config. The policy builds its next
// picker as it would anyway; the tracker's ticks keep re-weighting.
func (t *Tracker[K]) Ready(k K) {
	if t.cfg == nil {
		return
	}
	t.since[k] = t.clk.Now()
	if t.timer == nil {
		t.timer = t.sched.AfterFunc(t.cfg.Interval(), t.tick)
	}
}

// Forget drops k's start: its factor is 1 from now on. Policies need not
// call it for removed endpoints, whose starts are dropped when their
// window passes; it lets a policy with many short-lived keys free them
// early.
func (t *Tracker[K]) Forget(k K) { delete(t.since, k) }

// Ramping reports whether an endpoint may be in its window: while it is,
// factors may be below 1 and the ticks run.
func (t *Tracker[K]) Ramping() bool { return len(t.since) > 0 }

// Factor returns k's current factor, in (0, 1]: 1 without a config, for an
// endpoint with no recorded start, and from the end of its window on;
// else [Config.Factor] of the time since its start on the tracker's clock.
func (t *Tracker[K]) Factor(k K) float64 {
	if t.cfg == nil {
		return 1
	}
	s, ok := t.since[k]
	if !ok {
		return 1
	}
	return t.cfg.Factor(t.clk.Now().Sub(s))
}

// InWindow reports whether k is in its slow start period: a config is in
// force and less than its SlowStartWindow has passed, on the tracker's
// clock, since k became READY. It is what gRFC A100's
// endpoints_in_slow_start counts.
func (t *Tracker[K]) InWindow(k K) bool {
	if t.cfg == nil {
		return false
	}
	s, ok := t.since[k]
	return ok && t.clk.Now().Sub(s) < t.cfg.SlowStartWindow
}

// Resolution returns the multiplier a policy applies to every base weight
// of a picker (through [Tracker.Weight]) so that factors keep their
// precision in integer weights: 1 when no endpoint ramps (weights are
// used as they are), else [Resolution], lowered so that maxWeight times it
// fits a uint32.
func (t *Tracker[K]) Resolution(maxWeight uint32) uint32 {
	if !t.Ramping() {
		return 1
	}
	return max(1, min(Resolution, math.MaxUint32/max(maxWeight, 1)))
}

// Weight returns k's effective integer weight for a picker: base weight w
// times res (from [Tracker.Resolution]) times k's factor, rounded, at
// least 1 and at most 2^32-1.
func (t *Tracker[K]) Weight(k K, w, res uint32) uint32 {
	return Scale(w, res, t.Factor(k))
}

// Scale returns round(w·res·f), at least 1 and at most 2^32-1: an integer
// weight scaled by a factor, with res units per unit of w.
func Scale(w, res uint32, f float64) uint32 {
	v := math.Round(float64(w) * float64(res) * f)
	switch {
	case !(v >= 1):
		return 1
	case v >= math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(v)
}

// tick drops the starts whose window has passed, asks the policy to
// re-weight, and schedules the next tick while an endpoint ramps.
func (t *Tracker[K]) tick() {
	t.timer = nil
	if t.cfg == nil {
		return
	}
	now := t.clk.Now()
	for k, s := range t.since {
		if now.Sub(s) >= t.cfg.SlowStartWindow {
			delete(t.since, k)
		}
	}
	t.refresh()
	if len(t.since) > 0 {
		t.timer = t.sched.AfterFunc(t.cfg.Interval(), t.tick)
	}
}

// stop cancels the pending tick.
func (t *Tracker[K]) stop() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}
